#!/usr/bin/env python3
"""144 questions about handbook.txt as employees ask them, with verbatim answer strings, for ../shared/bench/prompt.py.

The questions cover every section of the sample handbook (the Tokyo section in Japanese, as its employees
would ask), roughly in proportion to its length: about half close to the handbook's wording, half in an
employee's own words; short and long, a few yes/no and a few compound ones. Each has 1-3 short strings that
occur verbatim (exact case) in handbook.txt, any of which a correct answer contains; the script asserts this.

  python3 .ci/bench/handbook_qa.py [OUT]     # default OUT: /work/benchdata/handbook-en
  python3 ../shared/bench/prompt.py --data /work/benchdata/handbook-en -k 5

OUT gets a BEIR-style folder: corpus.jsonl (one document, _id "handbook", the full handbook.txt of the repo
root next to .ci), queries.jsonl (_id "hb-001" ...), qrels.tsv (every question -> handbook, 1) and
answers.jsonl ({"_id", "answers": [...]}).
"""
import json
import os
import sys

QA = [
    # introduction
    ("Does the handbook also apply to contractors?", ["only where a section"]),
    ("My contract gives me better terms than the handbook. Which one wins?", ["take precedence"]),
    # 1.1 submitting an expense report
    ("Which tool do I use to claim my expenses?", ["Expensa"]),
    ("I paid in US dollars on my trip. What exchange rate is used for the reimbursement?",
     ["European Central Bank rate"]),
    ("My expense report was approved on the 24th, when will the money be paid out?", ["following salary run"]),
    ("I travel for work almost every month - can I get a company credit card, and who do I ask?",
     ["finance@northwind-analytics.example"]),
    ("What do I have to fill in for a dinner with a client?", ["names and companies of all attendees"]),
    # 1.2 deadlines and late submissions
    ("What's the deadline for submitting expenses?", ["30 days"]),
    ("What happens if I submit my expense report late?",
     ["approval of your department head", "six weeks longer"]),
    ("I forgot to claim a hotel bill from four months ago. Can I still get the money back?",
     ["90 days", "not reimbursed at all"]),
    # 1.3 receipts
    ("Do I need a receipt for a 12 euro taxi ride?", ["EUR 25"]),
    ("I lost the receipt for my train ticket, what now?", ["missing receipt declaration"]),
    ("Can I expense a glass of wine with dinner when I'm eating alone on a trip?",
     ["only as part of a meal with clients or partners"]),
    # 1.4 approval limits
    ("Who approves an expense report of 3,000 euros?", ["department head"]),
    ("Who approves the CFO's expense claims?", ["CEO"]),
    ("Can I split a big purchase over two reports so my manager can approve it?", ["breach of this policy"]),
    # 1.5 per diem
    ("per diem Japan?", ["EUR 70"]),
    ("I'm going to Chicago next week for three nights to see a client. How much daily allowance do I get?",
     ["EUR 75"]),
    ("What's the maximum hotel rate per night in New York?", ["EUR 230", "raised by EUR 60"]),
    ("Do I get the full daily allowance on the day I fly home?", ["75%"]),
    ("The conference provided a free lunch. Does that change my per diem?", ["30% for lunch"]),
    ("I had a ten-hour day trip to Rotterdam with no overnight stay. Can I claim anything for food?",
     ["EUR 20"]),
    # 1.6 mileage
    ("How much do I get per kilometre if I drive my own car to a client?", ["EUR 0.23"]),
    ("Do I get anything if I cycle to a client meeting?", ["EUR 0.10"]),
    ("Who pays if I get a speeding ticket while driving for work?", ["Traffic fines are never reimbursed"]),
    ("I drove from home straight to a customer site. Which distance can I claim?",
     ["exceeds your normal commute"]),
    # 2.1 booking travel
    ("We need to book a group trip for our team offsite and TravelDesk can't handle it. Who do I contact?",
     ["Atlas Corporate Travel", "travel@northwind-analytics.example"]),
    ("I found a cheaper hotel on a booking website. Am I allowed to book it myself?",
     ["only if they were cheaper"]),
    ("How far in advance do I need to book a flight to the US?", ["21 days"]),
    # 2.2 class of travel
    ("Can I fly business class to Tokyo?", ["approval from the CFO", "premium economy"]),
    ("Can I go first class on a 3.5 hour train ride?", ["first class is allowed"]),
    ("My flight lands at midnight - can I take an Uber to the hotel?", ["22:00 and 06:00"]),
    ("Do I get to keep the frequent flyer miles from work trips?", ["kept for private use"]),
    # 2.3 international travel
    ("How long before a trip to India should I start the visa process?", ["six weeks"]),
    ("I need to travel to a high-risk country. Who has to approve that, and how early?",
     ["Head of Security", "ten working days before departure"]),
    ("Will my company phone work in the US?", ["international data plan"]),
    # 2.4 travel insurance
    ("travel insurance policy number?", ["NWA-TR-2291"]),
    ("My suitcase never showed up in Lisbon. How much does the insurance cover?", ["EUR 2,500"]),
    ("If I stay a few extra days of holiday after a business trip, am I still insured?",
     ["three private days"]),
    ("Can my wife come along on my business trip and be covered by the company insurance?",
     ["Family members travelling with you are not covered"]),
    # 3.1 annual leave
    ("How many vacation days do I get per year?", ["25 days"]),
    ("I've been with the company for six years. Do I get more holidays?", ["27 days"]),
    ("Can I take my leftover vacation days into next year?", ["five unused days", "31 March"]),
    ("I want two weeks off in August - how early do I need to ask?", ["two weeks in advance"]),
    # 3.2 sick leave
    ("I woke up sick. Who do I have to tell and by when?", ["before 10:00"]),
    ("From which day of sickness do I need a doctor's note?", ["fourth day"]),
    ("Do I still get paid if I'm off sick for a long time?", ["first 52 weeks", "70%"]),
    ("I got the flu during my holiday. Do I lose those vacation days?", ["given back to you as annual leave"]),
    # 3.3 parental leave
    ("How much maternity leave do I get?", ["16 weeks"]),
    ("My partner is due in May. How much paternity leave can I take?",
     ["partner of the birth parent receives six weeks"]),
    ("We are adopting a child - do we get any leave?", ["each receive six weeks"]),
    ("Can I work reduced hours when I come back from parental leave?", ["80% of your contractual hours"]),
    # 3.4 public holidays
    ("I work remotely from Munich but my contract is with the Berlin office. Which public holidays do I get?",
     ["their contractual office"]),
    ("What is the floating holiday?", ["one floating holiday", "religious or cultural celebration"]),
    ("My manager wants me to work on Easter Monday. Do I get anything for it?", ["one day off in lieu"]),
    # 3.5 special leave
    ("My grandmother passed away. How many days off do I get?", ["two working days"]),
    ("Do I get a day off when I move house?", ["one working day per calendar year"]),
    ("My kid is suddenly sick at home and I need to stay with him. What can I do?", ["short-term care"]),
    # 3.6 unpaid leave
    ("Can I take a three-month sabbatical?", ["twelve months of service", "up to three months"]),
    ("Who has to approve unpaid leave?", ["department head and People Operations"]),
    ("Do I keep building up vacation days during two months of unpaid leave?",
     ["do not build up annual leave"]),
    # 4.1 eligibility
    ("How many days a week can I work from home?", ["three days per week"]),
    ("Can I work from home while I'm still on probation?", ["completed your probation period"]),
    ("What internet speed do I need for working from home?", ["50 Mbit/s"]),
    # 4.2 equipment stipend
    ("Is there a budget to buy a desk and chair for my home office?", ["EUR 600"]),
    ("Do I get anything towards my electricity and internet bills when working from home?", ["EUR 30"]),
    ("Do I have to give back the chair I bought with the home office money when I quit?",
     ["yours to keep", "do not have to be returned"]),
    # 4.3 working hours
    ("What are the core hours on Fridays?", ["10:00 to 14:00"]),
    ("Do I get paid for overtime?", ["hour for hour", "time off in lieu"]),
    ("Do I have to answer Slack messages in the evening?", ["not expected to read or answer"]),
    # 4.4 working abroad
    ("Can I work from my parents' place in Italy for a few weeks?", ["20 working days"]),
    ("How far ahead do I have to request working from another country?", ["three weeks"]),
    ("Can I work remotely from a country under EU sanctions?", ["restricted list"]),
    ("I'll be working from Bali for two weeks. Which hours do I need to be available?",
     ["still apply, whatever time zone"]),
    # 5 IT security
    ("What's the IT helpdesk phone extension?", ["4357"]),
    # 5.1 passwords and MFA
    ("minimum password length?", ["14 characters"]),
    ("Can I get my login codes by text message?", ["SMS are not permitted"]),
    ("Someone from IT phoned and asked for my MFA code. Is that normal?", ["never ask for your password"]),
    # 5.2 lost or stolen devices
    ("Somebody stole my laptop on the train, what do I do?", ["within one hour"]),
    ("I lost my access badge on a Saturday night and the service desk is closed. Who do I call?", ["4999"]),
    ("How soon do I need to file a police report for a stolen work phone?", ["48 hours"]),
    # 5.3 phishing
    ("I got a strange email asking me to log in. What should I do with it?", ["Report phishing"]),
    ("Oops, I clicked a link in a phishing email and typed my password. Now what?",
     ["change your password"]),
    ("A supplier emailed that their bank account has changed. Can I just update it?", ["verified by phone"]),
    # 5.4 software installation
    ("Can I install Spotify on my work laptop?", ["Self Service"]),
    ("The antivirus makes my laptop slow. Am I allowed to turn it off?",
     ["never disable or bypass security software"]),
    ("Am I allowed to use ChatGPT for work?", ["approved list"]),
    # 5.5 data classification and breaches
    ("Can I email a file with health data to a colleague?", ["never by email"]),
    ("I'm not sure how sensitive a document is. How should I handle it?", ["as Confidential"]),
    ("I think I sent client data to the wrong person. Who do I tell, and how fast?",
     ["privacy@northwind-analytics.example", "without delay"]),
    # 6 equipment
    ("Can my kids use my work laptop for their homework?", ["family members and friends must not use them"]),
    # 6.1 laptops
    ("What laptop do engineers get?", ["MacBook Pro 14-inch"]),
    ("I'm in marketing. How often is my laptop replaced?", ["4 years"]),
    ("I spilled coffee on my laptop. Do I have to pay for the repair?",
     ["at the company's expense", "EUR 250"]),
    # 6.2 phones
    ("Who gets a company phone?", ["on-call rotation", "department heads"]),
    ("Is there an allowance if I use my own phone for work?", ["EUR 15 per month"]),
    # 6.3 returning equipment
    ("I work remotely and I'm leaving the company. How do I return my laptop?", ["prepaid return box"]),
    ("Should I factory reset my laptop before I hand it back?", ["Do not wipe or reset devices yourself"]),
    # 7.1 respectful workplace
    ("A colleague keeps making comments about my looks. Is there someone outside the company I can talk to?",
     ["Marieke Jansen", "external confidential advisor"]),
    ("Does the code of conduct apply to interns?", ["including contractors"]),
    ("Is constantly leaving a colleague out of meetings considered bullying?", ["repeatedly excluding someone"]),
    # 7.2 conflicts of interest
    ("My sister works for one of our suppliers. Do I have to report that?", ["declaration of interests form"]),
    ("How soon do I have to declare a conflict of interest?", ["within 14 days"]),
    ("Can I have a paid side job next to my work here?", ["written approval"]),
    # 7.3 gifts and hospitality
    ("A client sent me a bottle of wine worth about 40 euros. Can I keep it?", ["EUR 50"]),
    ("Can I accept an Amazon voucher from a supplier?", ["vouchers and gift cards"]),
    ("A vendor gave me a gift worth 200 euros, what should I do?",
     ["politely declined", "handed over to Legal"]),
    ("A supplier invited me to a conference in Barcelona with the hotel paid. Can I go?",
     ["prior approval of your department head"]),
    # 7.4 reporting concerns and whistleblowing
    ("How can I report fraud anonymously?", ["SpeakUp"]),
    ("How long until I hear back after reporting a concern?", ["within seven days", "within three months"]),
    ("What is the compliance officer's email address?", ["compliance@northwind-analytics.example"]),
    ("Can I go to an outside authority with a whistleblowing report in the Netherlands?",
     ["Huis voor Klokkenluiders", "Whistleblowers Authority"]),
    # 8.1 before your first day
    ("What do I need to upload before my first day?",
     ["identity document, bank details and tax identification number"]),
    ("I'm starting fully remote. How do I get my laptop?", ["by courier"]),
    # 8.2 your first weeks
    ("What time should I arrive on my first day?", ["09:30"]),
    ("Which mandatory trainings do new hires have to do, and by when?",
     ["within the first three weeks", "security awareness"]),
    # 8.3 probation
    ("How long is the probation period?", ["two months"]),
    ("I'm on a six-month fixed-term contract. Do I have a probation period?", ["six months or less have none"]),
    ("When are the check-ins during probation?", ["end of week three", "end of week seven"]),
    # 9.1 review cycle
    ("When is the annual review?", ["November"]),
    ("How many colleagues give peer feedback in the annual review?", ["three to five colleagues"]),
    ("I disagree with my rating. What can I do?", ["second review", "ten working days"]),
    # 9.2 salary review
    ("When is payday?", ["25th"]),
    ("Do we get holiday pay in the Netherlands, and when is it paid?",
     ["8% of their annual gross salary", "May salary"]),
    ("How much of a raise comes with a promotion?", ["at least 5%"]),
    # 9.3 bonuses
    ("What's the target bonus for a team lead?", ["12% of base salary"]),
    ("When are bonuses paid?", ["March salary"]),
    ("I handed in my notice in February. Will I still get my bonus in March?",
     ["must not be working your notice period"]),
    ("I joined in November. Will I get a bonus for this year?", ["1 October"]),
    ("Is there a reward for referring a friend who gets hired?", ["EUR 2,000"]),
    # 10.1 emergencies and first aid
    ("Someone collapsed in the office. Who do I call?", ["112", "extension 1000"]),
    ("Where can I find a defibrillator in the office?", ["each reception desk"]),
    # 10.2 reporting incidents
    ("I tripped over a cable while working from home. Do I need to report that?", ["within 24 hours"]),
    ("A colleague hurt himself badly in the office and went to hospital. Who needs to be told?",
     ["facilities manager by phone immediately"]),
    # 10.3 ergonomics and wellbeing
    ("Does the company pay for computer glasses?", ["EUR 150 in total every two years"]),
    ("I need an ergonomic chair. How do I get one?", ["occupational health service assesses"]),
    ("Is there free counselling if I'm stressed, and can my partner use it too?",
     ["six counselling sessions", "members of their household"]),
    # 11 Tokyo office
    ("東京オフィスのコアタイムは？", ["10時30分から15時00分"]),
    ("What's the maximum commuting allowance per month in the Tokyo office?", ["30,000"]),
    ("新幹線で通勤しても通勤手当は出ますか？", ["対象外"]),
    ("引っ越して通勤経路が変わったら、どうすればいいですか？", ["2週間以内"]),
    ("東京オフィスでは有給休暇は何日もらえますか？", ["15日", "最大20日"]),
    ("1週間まとめて休みを取りたいのですが、いつまでに申請が必要ですか？", ["1か月前"]),
    ("年末年始の休みはいつからいつまで？", ["12月29日から1月3日"]),
]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[1] if len(sys.argv) > 1 else "/work/benchdata/handbook-en"
    with open(os.path.join(root, "handbook.txt"), encoding="utf-8") as f:
        text = f.read()
    assert len(QA) == 144, len(QA)
    assert len({q for q, _ in QA}) == len(QA), "duplicate question"
    for q, answers in QA:
        assert 1 <= len(answers) <= 3, q
        for ans in answers:
            assert ans in text, f"not in handbook.txt: {ans!r} ({q})"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "handbook", "title": "", "text": text}, ensure_ascii=False) + "\n")
    ids = [f"hb-{i:03d}" for i in range(1, len(QA) + 1)]
    with open(os.path.join(out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for qid, (q, _) in zip(ids, QA):
            f.write(json.dumps({"_id": qid, "text": q}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "qrels.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid in ids:
            f.write(f"{qid}\thandbook\t1\n")
    with open(os.path.join(out, "answers.jsonl"), "w", encoding="utf-8") as f:
        for qid, (_, answers) in zip(ids, QA):
            f.write(json.dumps({"_id": qid, "answers": answers}, ensure_ascii=False) + "\n")
    print(f"{len(QA)} questions written to {out}")


if __name__ == "__main__":
    main()
