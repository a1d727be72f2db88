"""The whole studio flow in a browser: account, upload, progress, result, re-cut, history."""
import re
import urllib.error
import urllib.request
from pathlib import Path

from playwright.sync_api import expect

from studio_steps import (RECORD_PROGRESS, choose_and_make, create_account, progress_values, sign_out, tab_through,
                          use_key, wait_for_playing_highlight)

ROOT = Path(__file__).resolve().parents[2]


def test_page_headers(server):
    """The page and its assets: a strict CSP, ETags (304 on a match), Cache-Control."""
    with urllib.request.urlopen(server + "/") as response:
        csp = response.headers["Content-Security-Policy"]
        etag = response.headers["ETag"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert response.headers["Cache-Control"] == "no-cache" and etag
        assert "<script" in response.read().decode()
    request = urllib.request.Request(server + "/", headers={"If-None-Match": etag})
    try:
        urllib.request.urlopen(request)
        raise AssertionError("expected 304")
    except urllib.error.HTTPError as error:
        assert error.code == 304
    with urllib.request.urlopen(server + "/studio/app.js") as response:
        assert response.headers["Content-Type"].startswith("text/javascript")
        assert "max-age" in response.headers["Cache-Control"]
    for name in ["../Package.swift", "missing.js", "%2e%2e%2fopenapi.json"]:
        try:
            urllib.request.urlopen(server + "/studio/" + name)
            raise AssertionError(f"{name} was served")
        except urllib.error.HTTPError as error:
            assert error.code == 404


def test_page_is_small_and_has_no_inline_code():
    """The page's own JavaScript and CSS stay under 75 KB (uncompressed; about 23 KB gzipped); no inline script, style or handler."""
    studio = ROOT / "Sources" / "MomentsServer" / "Studio"
    assets = [p for p in studio.iterdir() if p.suffix in (".js", ".css")]
    assert sum(p.stat().st_size for p in assets) < 75_000
    html = (studio / "index.html").read_text()
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []
    assert re.findall(r"<style|\sstyle=|\son[a-z]+=", html) == []
    for script in studio.glob("*.js"):
        assert "innerHTML" not in script.read_text() and "eval(" not in script.read_text(), script.name


def test_whole_flow(studio, media, out_dir):
    page, console = studio
    # Every control is reachable by keyboard: the first Tab stop is "Create account".
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Create account")).to_be_focused()
    expect(page.get_by_text("Have a key?")).to_be_visible()
    create_account(page)

    # Upload; the bar only moves forward through the upload and the job.
    page.evaluate(RECORD_PROGRESS)
    expect(page.get_by_label("Length", exact=True)).to_be_visible()
    page.get_by_label("Shape", exact=True).select_option("16:9")
    choose_and_make(page, media["video"], length=6)
    wait_for_playing_highlight(page)
    values = progress_values(page)
    assert values == sorted(values), f"the progress bar went back: {values}"
    assert values[-1] == 100 and len(set(values)) > 3, values
    expect(page.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "100")

    # The result: playing, seekable, downloadable, poster, storyboard, exports, the timeline.
    assert page.evaluate("""async () => {
        const v = document.querySelector('#player'); v.muted = true; await v.play();
        v.currentTime = v.duration / 2; await new Promise(r => v.addEventListener('seeked', r, { once: true }));
        return v.currentTime > 0 }""")
    # The player reads a signed media link with byte ranges; a tampered link opens nothing.
    ranged = page.evaluate("""async () => {
        const src = document.querySelector('#player').src;
        const part = await fetch(src, { headers: { Range: 'bytes=0-99' } });
        const forged = await fetch(src.slice(0, -2) + (src.endsWith('AA') ? 'BB' : 'AA'));
        return [new URL(src).pathname.startsWith('/api/v1/media/'), part.status, (await part.arrayBuffer()).byteLength, forged.status] }""")
    assert ranged == [True, 206, 100, 403], ranged
    download = page.get_by_role("link", name="Download")
    with page.expect_download() as info:
        download.click()
    assert info.value.suggested_filename.endswith(".mp4")
    # Editor exports and the storyboard sit behind their disclosures.
    page.get_by_text("Export for editors").click()
    for name in ["FCPXML", "OTIO", "EDL"]:
        assert page.get_by_role("link", name=name).get_attribute("href").startswith("blob:")
    page.get_by_text("How we chose").click()
    for alt in ["Poster", "Storyboard"]:
        page.wait_for_function("(alt) => [...document.images].some(i => i.alt.startsWith(alt) && i.naturalWidth > 0)", arg=alt)
    assert page.locator("#timeline .segment").count() >= 1

    # History: newest first, survives a reload.
    expect(page.get_by_role("heading", name="Your highlights")).to_be_visible()
    expect(page.locator("#jobs li")).to_have_count(1)
    page.get_by_role("heading", name="Your highlight", exact=True).evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(out_dir / "studio-1280x800.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("heading", name="Your highlight", exact=True).evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(out_dir / "studio-390x844.png"))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways at 390 px"
    page.set_viewport_size({"width": 1280, "height": 800})

    # Re-cut 9:16 with a moment kept: a tap on the original's timeline picks it (its time shows),
    # "Keep this moment" keeps it (twice is still once), one Apply with the shape: a new, portrait job.
    timeline = page.get_by_role("slider", name="Timeline of the original")
    timeline.click(position={"x": 30, "y": 10})
    expect(page.locator("#cursor-time")).not_to_have_text("0:00.0")
    assert page.locator("#marks li").count() == 0, "a tap picks a moment; it does not mark it"
    for _ in range(2):
        page.get_by_role("button", name="Keep this moment").click()
    expect(page.get_by_role("button", name="Remove: Kept")).to_have_count(1)
    expect(page.get_by_label("Shape of the re-cut")).to_have_value("16:9")
    page.get_by_label("Shape of the re-cut").select_option("9:16")
    page.get_by_role("button", name="Re-cut", exact=True).click()
    expect(page.locator("#jobs li")).to_have_count(2)
    page.wait_for_function("() => { const v = document.querySelector('#player'); return v && v.videoHeight > v.videoWidth && v.readyState >= 2 }",
                           timeout=120_000)
    size = page.evaluate("() => [document.querySelector('#player').videoWidth, document.querySelector('#player').videoHeight]")
    assert size[1] > size[0], size

    page.reload()
    expect(page.get_by_role("heading", name="Your highlights")).to_be_visible()
    expect(page.locator("#jobs li")).to_have_count(2)
    expect(page.locator("#jobs li").first.locator(".status")).to_have_text("completed")

    # The rows tell themselves apart: file, length, shape, re-cut, how long they are kept.
    rows = page.locator("#jobs li")
    expect(rows.first).to_contain_text("holiday.mp4")
    expect(rows.first).to_contain_text(re.compile(r"\d+ s · 9:16 · re-cut of holiday\.mp4 · kept until"))
    expect(rows.nth(1)).to_contain_text(re.compile(r"\d+ s · 16:9 · kept until"))
    # Delete the older highlight's media from the history: asked first ("Keep" keeps it), then its row goes.
    rows.nth(1).get_by_role("button", name="Delete", exact=False).first.click()
    rows.nth(1).get_by_role("button", name="Keep").click()
    expect(rows).to_have_count(2)
    rows.nth(1).get_by_role("button", name="Delete", exact=False).first.click()
    rows.nth(1).get_by_role("button", name="Delete for good").click()
    expect(rows).to_have_count(1)
    # Every control is reachable by keyboard, with a visible focus ring (the re-cut is shown again).
    wait_for_playing_highlight(page)
    missed, unringed = tab_through(page)
    assert missed == [] and unringed == [], (missed, unringed)

    # Sign out, then come back with the key through "Have a key?": the history is the account's.
    key = page.evaluate("() => localStorage.getItem('moments.key')")
    sign_out(page)
    expect(page.get_by_role("heading", name="Your highlights")).to_be_hidden()
    use_key(page, "mk_not_a_key")
    expect(page.locator("#account-error")).to_contain_text("not valid")
    use_key(page, key)
    expect(page.locator("#jobs li")).to_have_count(1)

    # Only the forged link's and the wrong key's refusals above may show in the console.
    assert console.unexpected(allowed=["status of 403", "status of 401"]) == [], console.errors


def test_refused_file(studio, media):
    """A file that is not a video, dropped on the page: the server's refusal in words next to Video."""
    page, console = studio
    create_account(page)
    page.evaluate("""(text) => {
        const data = new DataTransfer();
        data.items.add(new File([text], 'notes.mp4', { type: 'video/mp4' }));
        document.querySelector('#drop').dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }""", media["refused"].read_text())
    expect(page.locator("#drop")).to_contain_text("notes.mp4")
    page.get_by_role("button", name="Make highlight").click()
    message = page.locator("#video-error")
    expect(message).to_be_visible()
    text = message.inner_text()
    assert len(text) > 20 and "moments-browser-" not in text and "storage" not in text.lower(), text
    # The refusal is the server's answer (a 422 logged by the browser as a failed load), nothing else.
    assert console.unexpected(allowed=["status of 422"]) == [], console.errors


def test_length_error_next_to_length(studio, media):
    page, console = studio
    create_account(page)
    choose_and_make(page, media["video"], length=2)
    expect(page.locator("#length-error")).to_contain_text("5 to 180")
    assert console.unexpected() == [], console.errors
