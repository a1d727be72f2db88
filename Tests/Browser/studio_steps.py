"""Steps the browser tests share, by role and label as a person sees the page."""
from playwright.sync_api import expect

# Watches the progress bar's aria-valuenow and records every value it takes.
RECORD_PROGRESS = """() => {
  const bar = document.querySelector('[role="progressbar"]');
  window.progressValues = [Number(bar.getAttribute('aria-valuenow'))];
  new MutationObserver(() => window.progressValues.push(Number(bar.getAttribute('aria-valuenow'))))
    .observe(bar, { attributes: true, attributeFilter: ['aria-valuenow'] });
}"""


def create_account(page):
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("button", name="Forget key")).to_be_visible()
    expect(page.get_by_text("Plan: free.")).to_be_visible()
    expect(page.get_by_text("highlights used this month")).to_be_visible()
    key = page.locator("#new-key-value").inner_text()
    assert key and len(key) > 20
    return key


def choose_and_make(page, path, length=None):
    page.get_by_label("Video").set_input_files(str(path))
    if length is not None:
        page.get_by_label("Length").fill(str(length))
    page.get_by_role("button", name="Make highlight").click()


def progress_values(page):
    return page.evaluate("() => window.progressValues || []")


def wait_for_playing_highlight(page, timeout=120_000):
    """The result's <video> has loaded a highlight and plays."""
    video = page.locator("video")
    expect(video).to_be_visible(timeout=timeout)
    page.wait_for_function("() => { const v = document.querySelector('video'); return v && v.readyState >= 2 && v.duration > 0 }",
                           timeout=30_000)
    return video
