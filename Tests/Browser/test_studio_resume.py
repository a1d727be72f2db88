"""A tus upload cut off after its first PATCH resumes, after a reload, from the server's offset."""
import re

from playwright.sync_api import expect

from studio_steps import choose_and_make, create_account


def test_resumed_upload_after_reload(studio, media):
    page, console = studio
    create_account(page)

    patches = []

    def cut_after_first_patch(route):
        if route.request.method != "PATCH":
            return route.continue_()
        patches.append(route.request.headers.get("upload-offset"))
        if len(patches) == 1:
            return route.continue_()
        return route.abort("connectionreset")

    page.route("**/api/v1/uploads/*", cut_after_first_patch)
    choose_and_make(page, media["video"], length=5)
    expect(page.locator("#video-error")).to_contain_text("Choose the same file again", timeout=30_000)
    assert patches[0] == "0" and len(patches) >= 2, patches
    page.unroute("**/api/v1/uploads/*")

    page.reload()
    expect(page.get_by_role("button", name="Forget key")).to_be_visible()
    heads, resumed = [], []
    page.on("response", lambda r: heads.append(r.headers.get("upload-offset"))
            if r.request.method == "HEAD" and "/api/v1/uploads/" in r.url else None)
    page.on("request", lambda r: resumed.append(r.headers.get("upload-offset"))
            if r.method == "PATCH" and "/api/v1/uploads/" in r.url else None)
    choose_and_make(page, media["video"], length=5)
    # The upload ends in a job: the bar passes the upload's share and the job is in the history.
    page.wait_for_function("() => Number(document.querySelector('[role=progressbar]').getAttribute('aria-valuenow')) >= 40",
                           timeout=30_000)
    assert heads and int(heads[0]) > 0, heads
    assert resumed and resumed[0] == heads[0], (heads, resumed)
    expect(page.locator("#jobs li")).to_have_count(1)

    # Cancel it from the history while it runs (or delete it when it was quick).
    item = page.locator("#jobs li").first
    item.get_by_role("button", name="Cancel").or_(item.get_by_role("button", name="Delete")).click()
    expect(item.locator(".status")).to_have_text(re.compile("cancelled|deleted"))
    assert console.unexpected(allowed=["net::ERR_CONNECTION_RESET", "net::ERR_FAILED"]) == [], console.errors
