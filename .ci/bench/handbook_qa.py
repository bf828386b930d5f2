#!/usr/bin/env python3
"""144 questions about handbook.txt as employees ask them, with verbatim answer strings, for ../shared/bench/prompt.py.

The questions cover every section of the sample handbook (the Tokyo section in Japanese, as its employees
would ask), roughly in proportion to its length: about half close to the handbook's wording, half in an
employee's own words; short and long, a few yes/no and a few compound ones. Each has 1-3 short strings that
occur verbatim (exact case) in handbook.txt, any of which a correct answer contains; the script asserts this.

  python3 .ci/bench/handbook_qa.py [OUT]     # default OUT: /work/benchdata/handbook-en
  python3 .ci/bench/handbook_qa.py --held-out [OUT]   # the 72 held-out questions: /work/benchdata/handbook-heldout
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


HELD_OUT = [  # 72 more, written apart from QA by another hand, to check a rule tuned on QA
    # Intro
    ("Found a mistake in the employee handbook, where do I send corrections?",
     ["people-ops@northwind-analytics.example"]),

    # 1. Expenses
    ("I drove my own car to a customer site 80 km away. How much can I claim per km?",
     ["EUR 0.23 per kilometre"]),
    ("If my expense claim gets approved on the 22nd, when does the money actually hit my account?",
     ["following salary run"]),
    ("What is the deadline for filing an expense report?",
     ["within 30 days of the expense"]),
    ("I just found a taxi receipt from four months ago in my jacket pocket. Is it too late to get that money back?",
     ["more than 90 days old", "not reimbursed at all"]),
    ("Do I really need a receipt for a 12 euro coffee and sandwich?",
     ["EUR 25 or more", "description in Expensa is sufficient"]),
    ("Lost the receipt from my hotel stay in Berlin. What now?",
     ["missing receipt declaration"]),
    ("My trip report comes to about 4,000 euros in total - who has to sign it off?",
     ["Your department head", "Over EUR 1,000 up to EUR 10,000"]),
    ("Per diem for Japan?",
     ["EUR 70"]),
    ("Hotel cap per night in Zurich?",
     ["raised by EUR 60 per night", "EUR 175"]),
    ("On my trip to Munich the client took us out for lunch. Does that change my daily allowance for that day?",
     ["30% for lunch"]),
    ("Got flashed by a speed camera on my way to a customer meeting, can I expense the fine?",
     ["Traffic fines are never reimbursed"]),

    # 2. Travel
    ("Which tool do we use to book flights and hotels for business travel?",
     ["booked through TravelDesk"]),
    ("I found the same hotel 40 euros cheaper on a booking website than in our company travel tool. "
     "If I book it myself with my own card, will I still get the money back?",
     ["reimbursed only if they were cheaper than the", "TravelDesk fare on the same day"]),
    ("How many days before departure should intercontinental flights be booked?",
     ["21 days before departure"]),
    ("It's a 12-hour flight to Singapore. Am I allowed to fly business?",
     ["Business class requires prior written", "premium economy may be booked"]),
    ("My flight lands at 23:30, can I just grab an Uber to the hotel?",
     ["between 22:00 and 06:00"]),
    ("I'm tacking a long weekend onto my work trip to Lisbon. Am I still insured on the days off?",
     ["up to three private days"]),
    ("What does the travel insurance cover for lost luggage?",
     ["EUR 2,500 per trip"]),

    # 3. Leave
    ("I've been with the company for six years now, how many vacation days do I get?",
     ["27 days per year"]),
    ("Can unused annual leave be carried over into the next year?",
     ["Up to five unused days", "taken by 31 March"]),
    ("Woke up feeling awful. By what time do I need to tell my boss I'm not coming in?",
     ["before 10:00"]),
    ("I've been in bed with the flu since Monday and it's Thursday now. Do I need a doctor's note?",
     ["the fourth day of absence", "without a doctor's note"]),
    ("If I'm off sick long-term, how long does my full salary keep coming in?",
     ["full salary for the first 52 weeks"]),
    ("My wife is due in April. How much paid time off do I get as the dad?",
     ["partner of the birth parent receives six weeks"]),
    ("How many floating holidays do employees get?",
     ["one floating holiday per calendar year"]),
    ("My grandmother passed away last night. How many days off do I get?",
     ["grandparent or parent-in-law: two working days"]),
    ("My son woke up with a fever and daycare won't take him. Can I stay home to look after him today?",
     ["up to two days of short-term care"]),
    ("Can I apply for unpaid leave, and for how long?",
     ["unpaid leave of up to three months", "After twelve months of service"]),

    # 4. Remote work
    ("How many days per week can I work from home?",
     ["up to three days per week"]),
    ("I only started two weeks ago. Am I allowed to work from home yet?",
     ["completed your probation period"]),
    ("Min internet speed for working from home?",
     ["50 Mbit/s"]),
    ("Is there any money for buying a desk chair and a monitor for my home setup?",
     ["stipend of EUR 600"]),
    ("What are the core collaboration hours on Friday?",
     ["10:00 to 14:00 on Friday"]),
    ("I'd like to spend a month working from my parents' place in Spain. Is that OK?",
     ["20 working days per calendar year"]),

    # 5. IT security
    ("What is the minimum length for my company password?",
     ["at least 14 characters long"]),
    ("Can I just get my login codes by text message?",
     ["codes sent by SMS are not permitted"]),
    ("I left my work laptop on the train last night. Who do I call and how fast?",
     ["within one hour of noticing", "extension 4999"]),
    ("Got a weird email asking me to log in to a 'new payroll portal'. What should I do with it?",
     ["Report phishing"]),
    ("Oops, I clicked the link in one of those fake test phishing emails. What happens now?",
     ["15-minute refresher training"]),
    ("Am I allowed to paste client documents into ChatGPT?",
     ["approved for that data class", "Generative AI tools may be used only if"]),
    ("Can I email a colleague a spreadsheet with people's health info?",
     ["never by email"]),
    ("How quickly must a suspected data breach be reported?",
     ["within 72 hours", "privacy@northwind-analytics.example"]),

    # 6. Equipment
    ("What is the standard laptop for engineering and data science roles?",
     ["MacBook Pro 14-inch, 36 GB RAM"]),
    ("My laptop is due to be swapped out. Can I buy the old one?",
     ["old laptop for EUR 100"]),
    ("Knocked coffee over my laptop by accident. Am I going to have to pay for the repair?",
     ["repaired at the company's expense"]),
    ("How much is the mobile allowance for using a personal phone for work?",
     ["EUR 15 per month"]),
    ("I'm leaving the company and I work fully remote. How do I give back my laptop?",
     ["prepaid return box", "within five working days after their last working day"]),

    # 7. Code of conduct
    ("A coworker keeps making remarks about how I look. Is there someone outside the company I can talk to in confidence?",
     ["Marieke Jansen"]),
    ("My husband just got a job at one of our competitors. Do I have to tell anyone?",
     ["declaration of interests form", "Declare any potential conflict within 14 days"]),
    ("Do I need permission to do freelance photography on weekends?",
     ["Side jobs and other paid work", "require written approval from your"]),
    ("A supplier sent me a bottle of wine worth around 80 euros for the holidays. Can I keep it?",
     ["recorded in the gift register"]),
    ("A client gave me a 50 euro Amazon gift card as a thank-you. Is it OK to accept?",
     ["vouchers and gift cards must"]),
    ("How can I report a concern anonymously?",
     ["SpeakUp"]),

    # 8. Onboarding and probation
    ("What time should I show up on my first day?",
     ["09:30"]),
    ("Which mandatory courses must new employees complete, and by when?",
     ["within the first three weeks", "security awareness (about 45 minutes)"]),
    ("How long is the probation period on a permanent contract?",
     ["probation period of two months"]),
    ("I'm on a six-month fixed-term contract. Do I even have a trial period?",
     ["six months or less have none"]),

    # 9. Performance reviews and pay
    ("What day of the month do we get paid?",
     ["paid monthly on the 25th"]),
    ("I think my performance rating is unfair. Can I challenge it?",
     ["second review within ten working days"]),
    ("What is the target bonus for team leads?",
     ["12% of base salary"]),
    ("I started in mid-November. Will I get a bonus for this year?",
     ["on or after 1 October"]),
    ("Referral bonus amount?",
     ["referral bonus of EUR 2,000"]),
    ("I work in the Amsterdam office. How much holiday pay do I get on top of my salary, and when does it come?",
     ["8% of their annual gross salary", "paid with the May salary"]),

    # 10. Health and safety
    ("A colleague just collapsed at her desk and isn't responding. What do I do first?",
     ["call 112 first"]),
    ("I tripped over my laptop cable while working from home and sprained my ankle. Do I need to report this somewhere?",
     ["within 24 hours"]),
    ("Does the company pay for glasses for computer work?",
     ["EUR 150 in total every two years"]),
    ("I've been really stressed lately with stuff going on at home. Is there any free counselling?",
     ["six counselling sessions per year"]),

    # 11. Tokyo office (in Japanese)
    ("通勤手当の上限額はいくらですか？",
     ["月額30,000円"]),
    ("4月に入社したばかりなんですが、有給って何日もらえますか？",
     ["入社日に15日付与"]),
    ("年末年始休暇の期間は？有給は減りますか？",
     ["12月29日から1月3日まで", "年次有給休暇とは別に付与"]),
    ("熱が出て急に休むとき、何時までに連絡すればいいですか？",
     ["9時30分までに"]),
]

def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = sys.argv[1:]
    held_out = "--held-out" in args
    args = [a for a in args if a != "--held-out"]
    qa, prefix = (HELD_OUT, "ho") if held_out else (QA, "hb")
    out = args[0] if args else "/work/benchdata/handbook-" + ("heldout" if held_out else "en")
    with open(os.path.join(root, "handbook.txt"), encoding="utf-8") as f:
        text = f.read()
    assert len(QA) == 144 and len(HELD_OUT) == 72, (len(QA), len(HELD_OUT))
    assert len({q for q, _ in QA + HELD_OUT}) == len(QA) + len(HELD_OUT), "duplicate question"
    for q, answers in QA + HELD_OUT:
        assert 1 <= len(answers) <= 3, q
        for ans in answers:
            assert ans in text, f"not in handbook.txt: {ans!r} ({q})"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "handbook", "title": "", "text": text}, ensure_ascii=False) + "\n")
    ids = [f"{prefix}-{i:03d}" for i in range(1, len(qa) + 1)]
    with open(os.path.join(out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for qid, (q, _) in zip(ids, qa):
            f.write(json.dumps({"_id": qid, "text": q}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "qrels.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid in ids:
            f.write(f"{qid}\thandbook\t1\n")
    with open(os.path.join(out, "answers.jsonl"), "w", encoding="utf-8") as f:
        for qid, (_, answers) in zip(ids, qa):
            f.write(json.dumps({"_id": qid, "answers": answers}, ensure_ascii=False) + "\n")
    print(f"{len(qa)} questions written to {out}")

if __name__ == "__main__":
    main()
