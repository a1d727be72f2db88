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
    expect(page.get_by_role("button", name="Sign out on this device")).to_be_visible()
    expect(page.get_by_text("Plan: free.")).to_be_visible()
    expect(page.get_by_text("highlights used this month")).to_be_visible()
    key = page.locator("#new-key-value").inner_text()
    assert key and len(key) > 20
    return key


def sign_out(page):
    """Signs out on this device: asked first, then done."""
    page.get_by_role("button", name="Sign out on this device").click()
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("button", name="Create account")).to_be_visible()


def use_key(page, key):
    """Signs in with a key through "Have a key?"."""
    if not page.get_by_label("Your key", exact=True).is_visible():
        page.get_by_text("Have a key?").click()
    page.get_by_label("Your key", exact=True).fill(key)
    page.get_by_role("button", name="Use key").click()


def cancel_or_delete(item):
    """Cancels a running job from the history, or deletes a finished one (asked first: its row goes)."""
    cancel, delete = item.get_by_role("button", name="Cancel"), item.get_by_role("button", name="Delete", exact=False)
    cancel.or_(delete.first).click()
    if item.get_by_role("button", name="Delete for good").count():
        item.get_by_role("button", name="Delete for good").click()


def choose_and_make(page, path, length=None):
    page.get_by_label("Video").set_input_files(str(path))
    if length is not None:
        page.get_by_label("Length", exact=True).fill(str(length))
    page.get_by_role("button", name="Make highlight").click()


def progress_values(page):
    return page.evaluate("() => window.progressValues || []")


def wait_for_playing_highlight(page, timeout=120_000):
    """The result's <video> has loaded a highlight and plays."""
    video = page.locator("#player")
    expect(video).to_be_visible(timeout=timeout)
    page.wait_for_function("() => { const v = document.querySelector('#player'); return v && v.readyState >= 2 && v.duration > 0 }",
                           timeout=30_000)
    return video


# Numbers every visible control a keyboard user must reach (one radio per group: the checked one).
MARK_CONTROLS = """() => {
  // checkVisibility: also false inside a closed <details> (laid out, but content-visibility hidden).
  const visible = (e) => e.checkVisibility({ visibilityProperty: true }) && e.getClientRects().length > 0;
  const all = [...document.querySelectorAll('button, a[href], input, select, textarea, video[controls], [tabindex="0"]')]
    .filter((e) => visible(e) && !e.disabled && !(e.type === 'radio' && !e.checked));
  all.forEach((e, i) => e.dataset.kb = String(i));
  return all.map((e) => e.getAttribute('aria-label') || e.textContent.trim() || e.id || e.name);
}"""

# The focused control's number, and whether its focus ring shows.
FOCUSED = """() => {
  const e = document.activeElement;
  const style = getComputedStyle(e);
  // Inside the player, focus moves through the browser's own controls, which draw their own ring.
  if (e.tagName === 'VIDEO') return [e.dataset.kb ?? null, true];
  return [e.dataset.kb ?? null, style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2];
}"""


def tab_through(page):
    """Tabs through the page; returns the controls never reached and those reached without a ring."""
    names = page.evaluate(MARK_CONTROLS)
    page.locator("body").focus()
    reached, unringed = set(), []
    for _ in range(len(names) + 30):  # the player's own controls and the disclosures are stops too
        page.keyboard.press("Tab")
        index, ring = page.evaluate(FOCUSED)
        if index is None:
            continue
        reached.add(int(index))
        if not ring:
            unringed.append(names[int(index)])
    return [n for i, n in enumerate(names) if i not in reached], unringed
