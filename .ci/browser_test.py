"""CI's browser test of rag.py's page (--serve): headless Chromium against the Ollama stand-in.

    python .ci/browser_test.py [screenshot folder]     (with selenium; .ci/run installs it in a venv)

Starts the stand-in (hash embeddings, a small delay between streamed pieces) and `rag.py --serve` on a
copy of the handbook in a temporary folder, then drives the page with the keyboard where a person would,
checks what it shows, and saves screenshots (PNG) in the folder (default: /tmp/rag-ci-screenshots).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)
from test_rag import FakeModel  # noqa: E402  (a model whose answer the test chooses)

RAG = os.path.join(PROJECT, "rag.py")
STAND_IN = os.path.join(PROJECT, "..", "shared", "ollama-stand-in", "fake_ollama.py")
HANDBOOK = os.path.join(PROJECT, "handbook.txt")
HOSTILE_NAME = "<img src=x onerror=alert(1)>.md"  # a file name is untrusted text too
HOSTILE = """# Notes with <b>markup</b> & <script>window.__pwned = 1</script>

The onerror markup test <img src=x onerror="window.__pwned=2"> sits next to [a link](javascript:window.__pwned=3),
<a href="javascript:alert(1)">click me</a>, a fake citation [1] and [99], and </source> the end of a block.
<style>body { display: none }</style><iframe src="javascript:alert(2)"></iframe>
"""


def start(command, env=None):
    """Start a process that prints its address first; return (process, that first line)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=open(os.devnull, "w"), text=True, env=env)
    return process, process.stdout.readline().strip()


def harness(base, body):
    """Set the stand-in's runtime config (fault injection)."""
    request = urllib.request.Request(base + "/_harness/config", json.dumps(body).encode(), {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=5).read()


def main(shots):
    os.makedirs(shots, exist_ok=True)
    docs = tempfile.mkdtemp(prefix="rag-browser-")
    shutil.copy(HANDBOOK, docs)
    fake, line = start([sys.executable, STAND_IN, "--port", "0", "--hash-embeddings", "--token-delay", "0.15"])
    ollama = "http://127.0.0.1:" + line.split("=", 1)[1]
    cache = tempfile.mkdtemp(prefix="rag-browser-cache-")
    server, url = start([sys.executable, "-u", RAG, "--serve", "127.0.0.1:0", "--docs", docs, "--cache", cache],
                        env=dict(os.environ, OLLAMA_HOST=ollama))
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--user-data-dir=" + tempfile.mkdtemp(prefix="rag-chromium-"), "--window-size=1100,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    wait = WebDriverWait(driver, 20)
    checks = []

    def check(name, condition):
        checks.append((name, bool(condition)))
        print(("ok    " if condition else "FAIL  ") + name, flush=True)

    def shot(name, element=None):
        path = os.path.join(shots, name + ".png")
        (element.screenshot if element else driver.save_screenshot)(path)

    def turns():
        return driver.find_elements(By.CSS_SELECTOR, "#thread .turn")

    def finished(count):  # the count-th turn has its Explain button: the answer is complete
        wait.until(lambda d: len(turns()) >= count and turns()[count - 1].find_elements(By.CSS_SELECTOR, ".actions"))
        return turns()[count - 1]

    try:
        driver.get(url)
        wait.until(lambda d: d.find_element(By.ID, "about").text)
        check("the page says what it serves", "passages" in driver.find_element(By.ID, "about").text)
        hints = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#intro #hints a")]
        check(f"the hints are sections of the documents served ({hints})", len(hints) == 3 and all(
            hint in open(HANDBOOK, encoding="utf-8").read() for hint in hints))
        shot("01-start")

        box = driver.find_element(By.ID, "q")  # autofocus: type straight away, Enter asks
        driver.switch_to.active_element.send_keys("When do I have to file my expense report?" + Keys.ENTER)
        quick = WebDriverWait(driver, 20, poll_frequency=0.02)
        streamed = quick.until(lambda d: d.execute_script(
            "const a = document.querySelector('.turn .answer.streaming'); return a && a.textContent"))
        shot("02-streaming")
        turn = finished(1)
        answer = turn.find_element(By.CSS_SELECTOR, ".answer").text
        check(f"the answer streamed in (a part was shown before the whole: {len(streamed)} of {len(answer)} characters)", 0 < len(streamed) < len(answer))
        check("the answer is the handbook's deadline", "30 days" in answer)
        cites = turn.find_elements(By.CSS_SELECTOR, ".answer a.cite")
        check("the answer has a citation link", cites)
        check("the sources are listed under the answer", "Deadlines" in turn.find_element(By.CSS_SELECTOR, ".sources").text)
        check("the address keeps the question", "q=When+do+I+have+to+file" in driver.current_url)
        shot("03-answer")

        cites[0].send_keys(Keys.ENTER)  # keyboard: the link has focus, Enter opens the passage
        wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is not None)
        dialog = driver.find_element(By.ID, "passage")
        marks = [m.text.lower() for m in dialog.find_elements(By.TAG_NAME, "mark")]
        check("the cited passage opens with its source and lines", "handbook.txt, lines" in dialog.text)
        check("the question's words are marked in it", {"expense", "report", "file"} <= set(marks) or
              ("expense" in marks and "filed" in marks))
        shot("04-passage")
        opener = dialog.find_element(By.CSS_SELECTOR, "a.open")
        href = opener.get_attribute("href")
        check(f"the passage's document opens in a new tab at the passage's first words ({href[-60:]})",
              "/api/document?source=handbook.txt#:~:text=" in href and opener.get_attribute("target") == "_blank")
        page_window = driver.current_window_handle
        driver.switch_to.new_window("tab")
        driver.get(href)
        check("the document is shown as text, read-only", "Expense reports must be filed within 30 days"
              in driver.find_element(By.TAG_NAME, "body").text)
        shot("04b-document")
        driver.close()
        driver.switch_to.window(page_window)
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is None)
        check("Escape closes the passage", True)

        box.send_keys("and who approves a late one?" + Keys.ENTER)
        turn = finished(2)
        check("the follow-up is answered from the deadline passage",
              "Deadlines" in turn.find_element(By.CSS_SELECTOR, ".sources").text)
        check("the address carries the earlier question", "h=When+do+I" in driver.current_url)
        turn.find_element(By.CSS_SELECTOR, ".actions button").click()
        explain = wait.until(lambda d: turn.find_element(By.CSS_SELECTOR, ".explain"))
        check("Explain shows the earlier question's words at a lower weight", explain.find_elements(By.CSS_SELECTOR, ".chip.earlier"))
        check("Explain ranks the deadline passage first",
              "Deadlines" in explain.find_element(By.CSS_SELECTOR, ".scores li").text)
        check("Explain shows the request sent to the model", "--- system ---" in explain.find_element(By.CSS_SELECTOR, ".request").text)
        fits = explain.text.split("What fits the context")[1]
        given = fits.count("✓")
        check(f"Explain counts the passages that fit: {given} passage{'' if given == 1 else 's'}",
              f"question, {given} passage{'' if given == 1 else 's'}, " in fits)
        driver.execute_script("arguments[0].scrollIntoView()", turn)
        shot("05-follow-up")
        driver.set_window_size(1100, 2400)  # tall enough that the sticky question box does not cover it
        driver.execute_script("window.scrollTo(0, 0)")
        shot("06-explain", explain)
        driver.set_window_size(1100, 900)

        harness(ollama, {"fail_mode": "refuse"})  # the model server is down from now on
        driver.find_element(By.ID, "new").click()
        box.send_keys("per diem Japan")
        driver.find_element(By.ID, "search").click()
        turn = finished(3)
        check("search works with the model server down", "Per diem" in turn.find_element(By.CSS_SELECTOR, ".hits").text)
        shot("07-search-server-down")
        box.send_keys("What is the hotel cap in Japan?" + Keys.ENTER)
        turn = finished(4)
        problem = turn.find_element(By.CSS_SELECTOR, ".problem").text
        check("an answer with the server down says so in one sentence", problem.count(".") == 1 and "could not be asked" in problem)
        check("... and still shows the passages", "Per diem" in turn.find_element(By.CSS_SELECTOR, ".hits").text)
        driver.execute_script("arguments[0].scrollIntoView()", turn)
        shot("08-ask-server-down")
        harness(ollama, {"fail_mode": "none"})

        with open(os.path.join(docs, HOSTILE_NAME), "w") as f:  # a document added while serving
            f.write(HOSTILE)
        time.sleep(2.5)  # RELOAD_SECONDS
        driver.find_element(By.ID, "new").click()
        box.send_keys("What does the onerror markup test say?" + Keys.ENTER)
        turn = finished(5)
        check("the page says the documents were re-read", "re-read" in turn.find_element(By.CSS_SELECTOR, ".reread").text)
        check("the model's markup is shown as text", "<img src=x" in turn.find_element(By.CSS_SELECTOR, ".answer").text)
        turn.find_element(By.CSS_SELECTOR, ".answer a.cite").click()
        wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is not None)
        text = driver.find_element(By.ID, "passage-text").text
        check("the document's markup is shown as text", "<script>window.__pwned = 1</script>" in text and "javascript:" in text)
        check("the file name is shown as text", HOSTILE_NAME in driver.find_element(By.ID, "passage-where").text)
        check("no script of the document ran", driver.execute_script("return window.__pwned === undefined"))
        check("no element of the document was made", driver.execute_script(
            "return document.querySelectorAll('main img, main iframe, main style, dialog img, dialog a[href^=javascript]').length") == 0
            and len(driver.find_elements(By.TAG_NAME, "script")) == 1)
        try:
            driver.switch_to.alert
            check("no alert opened", False)
        except NoAlertPresentException:
            check("no alert opened", True)
        shot("09-hostile-passage")
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        driver.execute_script("arguments[0].scrollIntoView()", turn)
        shot("10-hostile-answer")

        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
        driver.get(url + "?q=What+is+the+per+diem+in+Japan%3F")  # a shared address asks its question again
        turn = finished(1)
        check("a shared address asks its question", "Per diem" in turn.find_element(By.CSS_SELECTOR, ".sources").text)
        shot("11-phone-dark")
        turn.find_element(By.CSS_SELECTOR, ".answer a.cite").click()
        wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is not None)
        shot("12-phone-dark-passage")

        # Warnings, plainly where the answer is: a model (the tests' fake) that cites a source it was not
        # given and is cut at its token limit.
        warner = FakeModel(text="The per diem in Japan is EUR 70 a day [1], and the hotel cap EUR 190 [9].", done_reason="length")
        second, second_url = start([sys.executable, "-u", RAG, "--serve", "127.0.0.1:0", "--docs", docs, "--cache", cache],
                                   env=dict(os.environ, OLLAMA_HOST=warner.url))
        try:
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
            driver.get(second_url + "?q=What+is+the+per+diem+in+Japan%3F")
            turn = finished(1)
            warnings = turn.find_element(By.CSS_SELECTOR, ".warnings").text
            check("the warnings are shown with the answer", "cites [9]" in warnings and "cut short" in warnings)
            check("a citation of a source not given is no link", turn.find_elements(By.CSS_SELECTOR, ".answer .cite.bad"))
            shot("13-phone-warnings")
            # An answer that cites nothing (as small models write them) is shown with every passage it was given.
            warner.text, warner.done_reason = "It is probably EUR 70 a day.", "stop"  # (a question of several near hits)
            driver.get(second_url + "?q=What+about+expenses%2C+travel%2C+leave+and+security%3F")
            turn = finished(1)
            given = turn.find_elements(By.CSS_SELECTOR, ".sources li a.cite")
            check("an answer citing nothing lists every passage it was given, each a link",
                  "passages it was given" in turn.text and [a.text for a in given] == [str(n) for n in range(1, len(given) + 1)]
                  and len(given) >= 3 and "cites no source" in turn.find_element(By.CSS_SELECTOR, ".warnings").text)
            shot("13b-phone-uncited")
            # Answers you can check: a sentence the passages do not hold is underlined, listed under the answer with
            # the date they do not state, and a sentence (or a citation) opens its passage with its quote marked.
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            warner.text = ("Expense reports must be filed within 30 days of the expense [1]. "
                           "The last day to file them is 31 December, 2024 [1].")
            driver.get(second_url + "?q=When+do+I+have+to+file+my+expense+report%3F")
            turn = finished(1)
            check_box = turn.find_element(By.CSS_SELECTOR, "details.check")
            items = check_box.find_elements(By.CSS_SELECTOR, "li")
            check("the check says how many sentences were found, open when one was not",
                  check_box.find_element(By.TAG_NAME, "summary").text == "Checked: 1 of 2 sentences found in the passages"
                  and check_box.get_attribute("open") is not None)
            check("the sentence not found is listed with the date no passage states", len(items) == 2
                  and items[1].text.startswith("not found") and "Not in the passages: “31 December, 2024”" in items[1].text)
            underlined = driver.execute_script("const h = CSS.highlights.get('unfound'); return h ? [...h].map(String) : []")
            check(f"the sentence not found is underlined in the answer ({underlined})",
                  underlined == ["The last day to file them is 31 December, 2024 1."])
            shot("20-check", turn)
            items[0].find_element(By.TAG_NAME, "a").click()
            wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is not None)
            quotes = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#passage-text mark.quote")]
            check(f"a sentence opens its passage with the quote that holds it marked ({quotes})",
                  len(quotes) == 1 and "filed within 30 days of the expense" in quotes[0].replace("\n", " "))
            shot("21-check-passage")
            driver.switch_to.active_element.send_keys(Keys.ESCAPE)
            wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is None)
            turn.find_element(By.CSS_SELECTOR, ".answer a.cite").click()
            wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is not None)
            check("a citation opens its passage with the quotes of the sentences that cite it marked",
                  driver.find_elements(By.CSS_SELECTOR, "#passage-text mark.quote"))
            driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        finally:
            second.terminate()
            second.wait()
            warner.close()

        # Asking within: a folder of teams, a scan among them. The Documents panel shows what was read of each
        # file; ticks (keyboard) ask within some, and the pick is kept in the address. The answer's Markdown
        # is shown as formatting, its markup as text; Stop, Copy and Ask again.
        teams, teams_cache = tempfile.mkdtemp(prefix="rag-browser-teams-"), tempfile.mkdtemp(prefix="rag-browser-cache-")
        os.makedirs(os.path.join(teams, "hr", "2026"))
        os.makedirs(os.path.join(teams, "it"))
        shutil.copy(HANDBOOK, os.path.join(teams, "hr"))
        with open(os.path.join(teams, "hr", "2026", "leave.md"), "w") as f:
            f.write("# Leave in 2026\n\nFrom 2026, parental leave for the partner is six weeks.\n")
        with open(os.path.join(teams, "it", "vpn.md"), "w") as f:
            f.write("# VPN\n\nThe VPN token is reset at the helpdesk, room 2.14: bring your badge.\n")
        with open(os.path.join(teams, "it", "scan.pdf"), "wb") as f:
            f.write(b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
                    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n")
        markdown = FakeModel(text="**Parental leave** for the partner is *six weeks* [1].\n\n## By role\n\n- partner: six weeks [1]\n"
                                  "- birth parent: see `table[2]` [2]\n\n| Role | Weeks |\n|---|---|\n| partner | 6 |\n\n"
                                  "<b>not bold</b> and <img src=x onerror=\"window.__pwned=4\">", delay=0.05)
        fourth, fourth_url = start([sys.executable, "-u", RAG, "--serve", "127.0.0.1:0", "--docs", teams, "--cache", teams_cache],
                                   env=dict(os.environ, OLLAMA_HOST=markdown.url))
        try:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            driver.get(fourth_url)
            wait.until(lambda d: "passages" in d.find_element(By.ID, "about").text)
            button = driver.find_element(By.ID, "docs-button")
            button.send_keys(Keys.ENTER)
            tree = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tree > li") and d.find_element(By.ID, "tree"))
            check("Documents lists the folders with their counts", "hr/ 2 files" in tree.text and "it/ 2 files, 1 without text" in tree.text)
            for twisty in driver.find_elements(By.CSS_SELECTOR, "#tree > li > .twisty"):
                twisty.send_keys(Keys.ENTER)
            wait.until(lambda d: "vpn.md" in tree.text and "handbook.txt" in tree.text)
            check("a file without text says why", "scan.pdf no text" in tree.text and "no text layer (a scan?): OCR it" in tree.text)
            check("a file read says how much of it", "handbook.txt 690 lines · changed" in tree.text)
            check("the header counts the files as the panel (and --list) does",
                  "3 documents (of 4 files: 1 without text)" in driver.find_element(By.ID, "about").text)
            driver.find_element(By.CSS_SELECTOR, "#tree input[data-term='/hr']").send_keys(Keys.SPACE)
            wait.until(lambda d: not d.find_element(By.ID, "within").get_attribute("hidden"))
            check("a ticked folder is said above the question and kept in the address",
                  driver.find_element(By.ID, "within").text.startswith("Asking within hr/") and "only=%2Fhr" in driver.current_url)
            check("the files in a ticked folder are ticked with it", driver.find_element(
                By.CSS_SELECTOR, "#tree input[data-term='/hr/handbook.txt']").is_selected())
            check("the kinds of the documents can be ticked, with their counts",
                  driver.find_element(By.ID, "kinds").text.split() == ["Kinds:", "md", "2", "txt", "1"]
                  and driver.find_elements(By.CSS_SELECTOR, "#kinds input[data-term='kind:md']"))
            shot("17-documents")
            ticked = lambda source: driver.find_element(By.CSS_SELECTOR, f"#tree input[data-term='/{source}']").is_selected()
            driver.find_element(By.CSS_SELECTOR, "#kinds input[data-term='kind:md']").send_keys(Keys.SPACE)
            check("a ticked kind with a ticked folder takes in the files of that kind in it (none here)",
                  not ticked("hr/handbook.txt") and not ticked("it/vpn.md"))
            driver.find_element(By.CSS_SELECTOR, "#tree input[data-term='/hr']").send_keys(Keys.SPACE)
            check("a ticked kind alone shows the files it takes in, ticked with it", ticked("it/vpn.md") and not ticked("hr/handbook.txt")
                  and not driver.find_element(By.CSS_SELECTOR, "#tree input[data-term='/it/vpn.md']").is_enabled())
            shot("17b-kind")
            driver.find_element(By.CSS_SELECTOR, "#tree input[data-term='/hr']").send_keys(Keys.SPACE)
            driver.find_element(By.CSS_SELECTOR, "#kinds input[data-term='kind:md']").send_keys(Keys.SPACE)
            driver.find_element(By.ID, "q").send_keys("How long is parental leave for the partner? Who resets the VPN token?" + Keys.ENTER)
            turn = finished(1)
            sources = turn.find_element(By.CSS_SELECTOR, ".sources").text
            check(f"the answer comes from the ticked folder only ({sources[:60]}...)", "hr/" in sources and "it/" not in sources)
            check("the turn says where it was asked", "Within hr/" in turn.text)
            answer = turn.find_element(By.CSS_SELECTOR, ".answer")
            check("the answer's Markdown is shown as formatting", answer.find_elements(By.CSS_SELECTOR, "strong")
                  and answer.find_elements(By.CSS_SELECTOR, "em") and len(answer.find_elements(By.CSS_SELECTOR, "li")) == 2
                  and answer.find_elements(By.CSS_SELECTOR, "h4") and len(answer.find_elements(By.CSS_SELECTOR, "table td")) == 2)
            check("... its markup as text, code as code", "<b>not bold</b>" in answer.text and "<img src=x" in answer.text
                  and answer.find_element(By.CSS_SELECTOR, "code").text == "table[2]" and not answer.find_elements(By.CSS_SELECTOR, "img, b")
                  and driver.execute_script("return window.__pwned === undefined"))
            shot("18-markdown-within", turn)
            buttons = {b.text: b for b in turn.find_elements(By.CSS_SELECTOR, ".actions button")}
            buttons["Copy"].click()
            check("Copy says it copied", WebDriverWait(driver, 5).until(lambda d: buttons["Copy"].text == "Copied"))
            buttons["Ask again"].click()
            finished(2)
            check("Ask again asks the same question within the same documents", turns()[1].find_element(By.CSS_SELECTOR, ".question").text
                  == turns()[0].find_element(By.CSS_SELECTOR, ".question").text and "Within hr/" in turns()[1].text)
            driver.get(driver.current_url)  # the address, reopened: the pick and the question with it
            turn = finished(1)
            check("a shared address keeps the pick", "Within hr/" in turn.text and driver.find_element(By.ID, "within").text.startswith("Asking within hr/"))
            markdown.delay = 0.5
            driver.find_element(By.ID, "q").send_keys("How long is parental leave for the partner?" + Keys.ENTER)
            WebDriverWait(driver, 10).until(lambda d: turns()[-1].find_element(By.CSS_SELECTOR, ".answer").text)
            stop = driver.find_element(By.ID, "stop")
            driver.find_element(By.ID, "q").send_keys("and for the birth parent?" + Keys.ENTER)  # typed ahead: no stop
            check("while the answer comes, Stop stands for Ask, and Enter in the question box does not stop it",
                  stop.is_displayed() and not driver.find_element(By.ID, "go").is_displayed() and not turns()[-1].find_elements(
                      By.CSS_SELECTOR, ".actions"))
            stop.send_keys(Keys.ENTER)  # (the keyboard way: Enter on the button)
            turn = finished(2)
            driver.find_element(By.ID, "q").clear()
            check("Stop stops the answer, keeps what was said and lists the passages", "Stopped" in turn.text
                  and turn.find_element(By.CSS_SELECTOR, ".answer").text and turn.find_elements(By.CSS_SELECTOR, ".sources li"))
            markdown.delay = 0.05
            driver.execute_script("const d = document.getElementById('before'); d.value = '2000-01-01';"
                                  "d.dispatchEvent(new Event('change'))")  # (a date picker, as a person's choice)
            driver.find_element(By.ID, "q").send_keys("How long is parental leave for the partner?" + Keys.ENTER)
            said = WebDriverWait(driver, 20).until(lambda d: "Failed" in turns()[-1].text and turns()[-1].text)
            check("a date that keeps no document is said", "changed before 2000-01-01" in driver.find_element(By.ID, "within").text
                  and "none of the documents is within the pick: pick others, or Ask all" in said)
            driver.find_element(By.CSS_SELECTOR, "#within button").click()
            check("Ask all clears the pick", driver.find_element(By.ID, "within").get_attribute("hidden") and "only=" not in driver.current_url)
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
            driver.get(fourth_url + "?only=%2Fit")
            driver.find_element(By.ID, "docs-button").click()
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tree > li"))
            driver.find_elements(By.CSS_SELECTOR, "#tree > li > .twisty")[-1].click()
            wait.until(lambda d: "vpn.md" in d.find_element(By.ID, "tree").text)
            shot("19-phone-documents")
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        finally:
            fourth.terminate()
            fourth.wait()
            markdown.close()
            shutil.rmtree(teams)
            shutil.rmtree(teams_cache)

        # A big folder, served as it is first read: the page says how far the reading has come, answers from
        # what is read so far (or says it will), and names the other files that hold a passage's text.
        big, big_cache = tempfile.mkdtemp(prefix="rag-browser-big-"), tempfile.mkdtemp(prefix="rag-browser-cache-")
        for n in range(600):  # 22 MB of copies of the handbook, as a shared drive has them
            os.makedirs(os.path.join(big, f"team{n % 6}"), exist_ok=True)
            shutil.copy(HANDBOOK, os.path.join(big, f"team{n % 6}", f"handbook ({n}).txt"))
        model = FakeModel(text="Expense reports are due within 30 days [1].")
        third, third_url = start([sys.executable, "-u", RAG, "--serve", "127.0.0.1:0", "--docs", big, "--cache", big_cache],
                                 env=dict(os.environ, OLLAMA_HOST=model.url))
        try:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            driver.get(third_url)
            about = WebDriverWait(driver, 20, poll_frequency=0.05).until(lambda d: d.find_element(By.ID, "about").text)
            check(f"the page says it is reading the documents ({about})", about.startswith("Reading the documents: ")
                  and " of 600 files" in about)
            shot("14-reading")
            driver.find_element(By.ID, "q").send_keys("When do I have to file my expense report?" + Keys.ENTER)
            turn = WebDriverWait(driver, 60).until(lambda d: turns() and (turns()[0].find_elements(By.CSS_SELECTOR, ".actions")
                                                                          or "ask again" in turns()[0].text) and turns()[0])
            said = turn.text
            check(f"a question while reading is answered from the files read so far, or told to wait ({said[:150]!r})",
                  "Still reading the documents" in said and "30 days" in said or "ask again when it is done." in said
                  and "Failed" not in said)
            shot("15-asked-while-reading")
            about = WebDriverWait(driver, 120, poll_frequency=0.05).until(
                lambda d: ("read so far" in d.find_element(By.ID, "about").text or "Reading" not in d.find_element(By.ID, "about").text)
                and d.find_element(By.ID, "about").text)
            if "read so far" in about:  # (it is, unless the reading ended within one look of the page's)
                driver.find_element(By.ID, "q").send_keys("Who approves a late expense report?" + Keys.ENTER)
                turn = finished(2)
                check("a question while reading is answered from the files read so far, and says so",
                      "Still reading the documents" in turn.text and "uses the files read so far" in turn.text)
                shot("15b-answered-while-reading")
            WebDriverWait(driver, 120).until(lambda d: not d.find_element(By.ID, "about").text.startswith("Reading"))
            time.sleep(1.5)
            driver.get(third_url + "?q=When+do+I+have+to+file+my+expense+report%3F")
            turn = finished(1)
            check("once read, the page says what it serves", driver.find_element(By.ID, "about").text.startswith("600 documents"))
            sources = turn.find_element(By.CSS_SELECTOR, ".sources").text
            check(f"the same text in other files is one source, naming them ({sources[:80]}...)", "also in" in sources and "more" in sources)
            shot("16-copies")
        finally:
            third.terminate()
            third.wait()
            model.close()
            shutil.rmtree(big)
            shutil.rmtree(big_cache)

        logs = [entry["message"] for entry in driver.get_log("browser")]
        check("no Content-Security-Policy violation or script error", not [m for m in logs if "Security Policy" in m or "Uncaught" in m])
        for message in logs:
            print("  console:", message[:200])
    finally:
        driver.quit()
        server.terminate()
        fake.terminate()
        server.wait()
        fake.wait()
        shutil.rmtree(docs)
        shutil.rmtree(cache)
    failed = [name for name, passed in checks if not passed]
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "rag-ci-screenshots")))
