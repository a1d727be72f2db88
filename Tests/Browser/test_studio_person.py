"""The studio as a person uses it on a phone (390x844): a job is never lost to a second press,
the key can be kept, signing out asks first, and the ready highlight comes into view by itself."""
import hashlib
import re
import subprocess
from pathlib import Path

import axe_playwright_python

from playwright.sync_api import expect

from studio_steps import choose_and_make, create_account, wait_for_playing_highlight

PHONE = {"width": 390, "height": 844}


def in_view(page, selector):
    return page.evaluate("""(selector) => {
        const r = document.querySelector(selector).getBoundingClientRect();
        return r.top >= -1 && r.top < innerHeight && r.bottom > 0 }""", selector)


# axe-core 4.12.1 as axe-playwright-python 0.1.8 ships it (make test-browser installs it), pinned.
AXE_SHA256 = "84494fec757e4710dc751c8d7a636e457f4532f08f85c86dc9070133fbff53bc"


def axe_violations(page):
    """axe-core's violations on the page as it is now: [(rule, [first targets])]."""
    source = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_bytes()
    assert hashlib.sha256(source).hexdigest() == AXE_SHA256, "axe.min.js is not the pinned axe-core"
    page.evaluate(source.decode())
    return page.evaluate("""async () => (await axe.run(document, { resultTypes: ['violations'] })).violations
        .map((v) => [v.id, v.nodes.slice(0, 3).map((n) => n.target.join(' '))])""")


# Visible tap targets smaller than 44x44 CSS px (a radio counts by its label), by name.
SMALL_TARGETS = """() => {
  // checkVisibility: also false inside a closed <details> (laid out, but content-visibility hidden).
  const visible = (e) => e.checkVisibility({ visibilityProperty: true }) && e.getClientRects().length > 0;
  const all = [...document.querySelectorAll('button, a[href], input, select, summary, [role="slider"]')].filter(visible);
  return all.map((e) => {
    const target = e.type === 'radio' ? e.closest('label') : e;
    const r = target.getBoundingClientRect();
    return [e.getAttribute('aria-label') || e.textContent.trim() || e.id || e.type, Math.round(r.width), Math.round(r.height)];
  }).filter(([, w, h]) => w < 44 || h < 44);
}"""

# Contrast of what marks a control or a chosen moment against what it sits on (3:1 is the floor).
CONTRASTS = """() => {
  const rgb = (text) => text.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(rgb(a)), lum(rgb(b))].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const back = (e) => { for (let n = e.parentElement; n; n = n.parentElement) {
    const c = getComputedStyle(n).backgroundColor; if (!c.startsWith('rgba(0, 0, 0, 0)')) return c; } return 'rgb(255, 255, 255)'; };
  const out = {};
  for (const e of document.querySelectorAll('input[type="number"], select')) out[e.id] = ratio(getComputedStyle(e).borderTopColor, back(e));
  const drop = document.querySelector('#drop');
  out.drop = ratio(getComputedStyle(drop).borderTopColor, getComputedStyle(drop).backgroundColor);
  const segment = document.querySelector('#timeline .segment');
  const bar = document.querySelector('#timeline');
  // Over the filmstrip a moment is framed (its outline); on the plain bar it is filled.
  if (segment) {
    const style = getComputedStyle(segment);
    out.moment = ratio(bar.classList.contains('filmstrip') ? style.outlineColor : style.backgroundColor, getComputedStyle(bar).backgroundColor);
  }
  return out;
}"""

# The timeline's filmstrip: its class, the storyboard picture's size as loaded and as the job
# detail gives it, and the width the filmstrip row is drawn at against the bar's.
FILMSTRIP = """async () => {
  const bar = document.querySelector('#timeline');
  const url = getComputedStyle(bar).backgroundImage.replace(/^url\\("?|"?\\)$/g, '');
  const image = new Image();
  image.src = url;
  await image.decode();
  const job = await (await fetch(`/api/v1/jobs/${document.querySelector('#jobs .showing')?.closest('[data-job]')?.dataset.job || ''}`,
    { headers: { Authorization: `Bearer ${localStorage.getItem('moments.key') || ''}` } })).json().catch(() => ({}));
  const frame = job.output?.storyboard;
  const size = getComputedStyle(bar).backgroundSize.split(' ').map(parseFloat);  // per cent of the bar
  return { class: bar.classList.contains('filmstrip'), loaded: [image.naturalWidth, image.naturalHeight],
    size: frame ? [frame.width, frame.height] : null, barWidth: bar.clientWidth,
    rowWidth: frame ? (size[0] / 100) * bar.clientWidth * frame.filmstrip.width / frame.width : 0 };
}"""


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
    # Download is a primary button; every tap target is at least 44 px; borders and moments 3:1.
    download = page.get_by_role("link", name="Download")
    assert "primary" in download.get_attribute("class")
    assert page.evaluate(SMALL_TARGETS) == []
    contrasts = page.evaluate(CONTRASTS)
    assert "moment" in contrasts and all(v >= 3 for v in contrasts.values()), contrasts
    # The timeline's background is the storyboard's filmstrip row: the picture the job detail
    # describes, scaled so the row fills the bar.
    page.wait_for_selector("#jobs .showing")
    filmstrip = page.evaluate(FILMSTRIP)
    assert filmstrip["class"] and filmstrip["loaded"] == filmstrip["size"], filmstrip
    assert abs(filmstrip["rowWidth"] - filmstrip["barWidth"]) <= 1, filmstrip
    page.locator("#timeline").screenshot(path="bench-out/studio-filmstrip.png")
    # A tap on a chosen moment of the original's timeline plays that moment of the highlight.
    first = page.locator("#timeline .segment").first
    first.click()
    page.wait_for_function("() => { const p = document.querySelector('#player'); return !p.paused && p.currentTime > 0.3 }")
    # The history row shows the highlight's poster; axe-core finds nothing, the disclosures open too.
    page.wait_for_function("() => { const i = document.querySelector('#jobs .job-poster'); return i && !i.hidden && i.naturalWidth > 0 }")
    page.get_by_text("Export for editors").click()
    page.get_by_text("How we chose").click()
    assert axe_violations(page) == []
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
    expect(page.get_by_label("Length", exact=True)).to_have_value("10")
    page.get_by_label("Length", exact=True).fill("60")
    page.get_by_role("button", name="Make highlight").click()
    expect(page.locator("#length-error")).to_contain_text("This video is 10 s long")
    assert sent == [], sent
    assert console.unexpected() == [], console.errors


def test_on_a_touch_screen_the_box_is_the_picker_and_no_drop_is_offered(browser, server, media):
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(server + "/")
        create_account(page)
        # No "drop a file" on a touch screen; the whole box opens the picker.
        expect(page.locator("#drop-text")).to_be_hidden()
        box = page.locator("#drop").bounding_box()
        picker = page.locator("#video").bounding_box()
        assert picker["width"] >= box["width"] - 4 and picker["height"] >= box["height"] - 4, (box, picker)
        with page.expect_file_chooser() as chooser:
            page.locator("#drop").tap(position={"x": box["width"] - 10, "y": box["height"] - 10})
        chooser.value.set_files(str(media["video"]))
        expect(page.locator("#chosen-name")).to_have_text("holiday.mp4")
        assert page.evaluate(SMALL_TARGETS) == []
    finally:
        context.close()


def test_a_dropped_upload_never_holds_the_place(studio, media):
    """Cut off, reloaded, discarded: the server is told (DELETE), so the free plan's one place is
    free again at once; a Cancel while reconnecting does the same."""
    page, console = studio
    page.set_viewport_size(PHONE)
    create_account(page)
    deleted = []
    page.on("request", lambda r: deleted.append(r.url) if r.method == "DELETE" and "/api/v1/uploads/" in r.url else None)
    page.route("**/api/v1/uploads/*", lambda route: route.abort("connectionreset") if route.request.method == "PATCH"
               else route.continue_())
    choose_and_make(page, media["video"], length=5)
    expect(page.locator("#reconnect")).to_contain_text("Reconnecting", timeout=30_000)
    page.reload()
    expect(page.locator("#stopped")).to_contain_text("holiday.mp4 stopped at 0 %")
    page.get_by_role("button", name="Discard").click()
    expect(page.locator("#stopped")).to_be_hidden()
    page.wait_for_function("() => !Object.keys(localStorage).some((k) => k.startsWith('moments.upload.'))")
    assert len(deleted) == 1, deleted
    # Cancel while reconnecting: the upload is deleted on the server too.
    choose_and_make(page, media["video"], length=5)
    expect(page.locator("#reconnect")).to_contain_text("Reconnecting", timeout=30_000)
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#stage")).to_contain_text("Upload cancelled")
    page.wait_for_function("() => !Object.keys(localStorage).some((k) => k.startsWith('moments.upload.'))")
    assert len(deleted) == 2, deleted
    # The place is free: a new upload goes through to a highlight.
    page.unroute("**/api/v1/uploads/*")
    choose_and_make(page, media["video"], length=5)
    wait_for_playing_highlight(page)
    assert console.unexpected(allowed=["net::ERR_CONNECTION_RESET", "net::ERR_FAILED"]) == [], console.errors


def test_a_visitor_picks_a_video_first(studio, media):
    """No account yet: the video can be chosen and made at once; the account is made then, its key
    shown to keep. axe-core finds nothing on the first screen."""
    page, console = studio
    page.set_viewport_size(PHONE)
    assert axe_violations(page) == []
    expect(page.get_by_role("button", name="Create account")).to_be_visible()
    choose_and_make(page, media["video"], length=5)
    expect(page.get_by_role("button", name="Copy key")).to_be_visible()
    assert page.evaluate("() => localStorage.getItem('moments.key')").startswith("mk_")
    wait_for_playing_highlight(page)
    expect(page.locator("#jobs li")).to_have_count(1)
    assert console.unexpected() == [], console.errors
