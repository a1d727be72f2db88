"""The studio as a person uses it on a phone (390x844): a job is never lost to a second press,
the key can be kept, signing out asks first, and the ready highlight comes into view by itself."""
import re
import subprocess

from playwright.sync_api import expect

from studio_steps import choose_and_make, create_account, wait_for_playing_highlight

PHONE = {"width": 390, "height": 844}


def in_view(page, selector):
    return page.evaluate("""(selector) => {
        const r = document.querySelector(selector).getBoundingClientRect();
        return r.top >= -1 && r.top < innerHeight && r.bottom > 0 }""", selector)


def test_a_second_press_while_a_job_runs_loses_nothing(studio, media):
    page, console = studio
    page.set_viewport_size(PHONE)
    create_account(page)
    uploads = []
    page.on("request", lambda r: uploads.append(r.url) if r.method == "POST" and "/api/v1/upload" in r.url else None)
    # The 30 s video: its job outlasts the checks below.
    choose_and_make(page, media["longer"], length=6)
    # While the highlight is made, the button waits for it: a press (or a submit by Enter) sends nothing.
    button = page.locator("#make-button")
    state = "() => ['length', '#length', 'length-error', '#length-error', 'video-error', '#video-error', 'facts', '#chosen-facts', 'make-error', '#make-error'].map((x, i, a) => i % 2 ? document.querySelector(x).value ?? document.querySelector(x).textContent : x)"
    try:
        expect(button).to_be_disabled()
    except AssertionError:
        raise AssertionError(f"Make stayed enabled after a press: {page.evaluate(state)}")
    expect(button).to_have_text("Making your highlight…")
    page.evaluate("() => document.querySelector('#upload-form').requestSubmit()")
    page.evaluate("() => document.querySelector('#make-button').click()")
    # The history follows the running job, then shows it finished; the page shows the result.
    expect(page.locator("#jobs li")).to_have_count(1, timeout=30_000)
    wait_for_playing_highlight(page)
    expect(page.locator("#jobs li").first.locator(".status")).to_have_text("completed")
    expect(page.locator("#jobs li").first).to_contain_text("Now showing")
    assert len(uploads) == 1, uploads
    expect(button).to_be_enabled()
    expect(button).to_have_text("Make highlight")
    # The ready highlight is in view at 390x844 with no scroll by the test, its heading focused.
    assert in_view(page, "#result-title"), page.evaluate("() => [JSON.stringify(document.querySelector('#result-title').getBoundingClientRect()), scrollY, innerHeight, document.activeElement.id]")
    expect(page.get_by_role("heading", name="Your highlight", exact=True)).to_be_focused()
    assert console.unexpected() == [], console.errors


def test_the_key_can_be_kept_and_signing_out_asks_first(studio, browser, server):
    page, console = studio
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page.set_viewport_size(PHONE)
    key = create_account(page)
    # After sign-up the next step is the video; the key is shown with Copy and Save.
    expect(page.get_by_label("Video")).to_be_focused()
    page.get_by_role("button", name="Copy key").click()
    expect(page.locator("#copy-note")).to_have_text("Copied.")
    assert page.evaluate("() => navigator.clipboard.readText()") == key
    saved = page.get_by_role("link", name="Save key file")
    assert saved.get_attribute("href").startswith("blob:")
    with page.expect_download() as info:
        saved.click()
    assert key in open(info.value.path()).read()
    # Signing out asks first; staying keeps the account.
    page.get_by_role("button", name="Sign out on this device").click()
    expect(page.get_by_text("Without your key you cannot come back")).to_be_visible()
    page.get_by_role("button", name="Stay signed in").click()
    expect(page.get_by_text("Without your key you cannot come back")).to_be_hidden()
    assert page.evaluate("() => localStorage.getItem('moments.key')") == key
    page.get_by_role("button", name="Sign out on this device").click()
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("button", name="Create account")).to_be_visible()
    assert page.evaluate("() => localStorage.getItem('moments.key')") is None
    # The words are a person's: no "API key" on the page.
    assert "API key" not in page.locator("body").inner_text()
    assert console.unexpected() == [], console.errors


def test_limits_are_said_and_kept_before_anything_is_sent(studio, media, workdir):
    page, console = studio
    page.set_viewport_size(PHONE)
    create_account(page)
    # The plan's limits stand under the picker, and what a highlight uses beside Make.
    expect(page.locator("#limits")).to_contain_text("Your plan takes videos up to 10:00 long")
    expect(page.locator("#make-cost")).to_have_text(re.compile(r"Uses 1 of your \d+ left this month\."))
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.method in ("POST", "PATCH") and "/api/v1/upload" in r.url else None)
    # An 11-minute video on the free plan (10 minutes): refused in the page, no byte sent.
    long = workdir / "eleven-minutes.webm"
    if not long.exists():
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "color=c=gray:s=64x64:r=1", "-t", "660", "-c:v", "libvpx", "-b:v", "8k", str(long)], check=True)
    page.get_by_label("Video").set_input_files(str(long))
    expect(page.locator("#chosen-facts")).to_contain_text("11:00 ·")
    page.get_by_role("button", name="Make highlight").click()
    expect(page.locator("#video-error")).to_contain_text("your plan takes videos up to 10:00")
    # A 10 s video: the length is held to it, and a longer one is refused in words, no byte sent.
    page.get_by_label("Video").set_input_files(str(media["video"]))
    expect(page.locator("#chosen-facts")).to_contain_text("0:10 ·")
    expect(page.locator("#chosen-look")).to_be_visible()
    expect(page.get_by_label("Length")).to_have_value("10")
    page.get_by_label("Length").fill("60")
    page.get_by_role("button", name="Make highlight").click()
    expect(page.locator("#length-error")).to_contain_text("This video is 10 s long")
    assert sent == [], sent
    assert console.unexpected() == [], console.errors
