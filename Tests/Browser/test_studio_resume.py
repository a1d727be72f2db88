"""A tus upload cut off (a dropped connection, or a reload in the middle of it) resumes from the
server's offset when the same file is chosen again."""
import re

from playwright.sync_api import expect

from studio_steps import RECORD_PROGRESS, cancel_or_delete, choose_and_make, create_account, progress_values, wait_for_playing_highlight


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
    # The page does not give up: it says it is reconnecting, with Retry now and Cancel.
    try:
        expect(page.locator("#reconnect")).to_contain_text("Reconnecting", timeout=30_000)
    except AssertionError:
        raise AssertionError((patches, page.evaluate("() => ['#stage', '#video-error', '#make-error', '#length-error', '#jobs'].map((s) => document.querySelector(s).textContent)")))
    expect(page.get_by_role("button", name="Retry now")).to_be_visible()
    page.get_by_role("button", name="Retry now").click()
    assert patches[0] == "0" and len(patches) >= 2, patches

    # Reloaded (the connection still down), the page says what stopped; then, back online, the same
    # file with other settings resumes (the upload keeps the settings it started with), and nothing
    # new is created.
    page.reload()
    expect(page.get_by_role("button", name="Sign out on this device")).to_be_visible()
    expect(page.locator("#stopped")).to_contain_text(re.compile(r"holiday\.mp4 stopped at \d+ %"))
    page.unroute("**/api/v1/uploads/*")
    heads, resumed, created = [], [], []
    page.on("response", lambda r: heads.append(r.headers.get("upload-offset"))
            if r.request.method == "HEAD" and "/api/v1/uploads/" in r.url else None)
    page.on("request", lambda r: resumed.append(r.headers.get("upload-offset"))
            if r.method == "PATCH" and "/api/v1/uploads/" in r.url else None)
    page.on("request", lambda r: created.append(r.url) if r.method == "POST" and "/api/v1/uploads" in r.url else None)
    page.get_by_label("Shape", exact=True).select_option("9:16")
    choose_and_make(page, media["video"], length=7)
    # The upload ends in a job: the bar passes the upload's share and the job is in the history.
    try:
        page.wait_for_function("() => Number(document.querySelector('[role=progressbar]').getAttribute('aria-valuenow')) >= 40",
                               timeout=30_000)
    except Exception:
        raise AssertionError(page.evaluate("() => ['#stage', '#video-error', '#make-error', '#length-error', '#reconnect-text'].map((s) => document.querySelector(s).textContent).concat([document.querySelector('#length').value, document.querySelector('#length').max, document.querySelector('#chosen-facts').textContent])"))
    assert heads and int(heads[-1]) > 0, heads
    assert resumed and resumed[0] == heads[-1], (heads, resumed)
    assert created == [], created
    expect(page.locator("#stopped")).to_be_hidden()
    expect(page.locator("#jobs li")).to_have_count(1)

    # Cancel it from the history while it runs (or delete it when it was quick).
    item = page.locator("#jobs li").first
    cancel_or_delete(item)
    expect(page.locator("#jobs li .status.cancelled").or_(page.locator("#no-jobs:not([hidden])")).first).to_be_visible()
    assert console.unexpected(allowed=["net::ERR_CONNECTION_RESET", "net::ERR_FAILED"]) == [], console.errors


def test_reload_during_upload_resumes(studio, media, server):
    page, console = studio
    key = create_account(page)
    # A slow uplink (48 KB/s), so the page is reloaded while a PATCH is on its way.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 48 * 1024})
    with page.expect_response(lambda r: r.request.method == "PATCH" and r.status == 204, timeout=30_000) as first:
        choose_and_make(page, media["longer"], length=5)
    upload_url = first.value.url
    page.reload()
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    state = page.request.get(upload_url, headers={"Authorization": f"Bearer {key}"}).json()
    assert state["state"] == "receiving" and 0 < state["offset"] < state["length"], state

    resumed = []
    page.on("request", lambda r: resumed.append((r.url, r.headers.get("upload-offset")))
            if r.method == "PATCH" and "/api/v1/uploads/" in r.url else None)
    choose_and_make(page, media["longer"], length=5)
    expect(page.get_by_text("resumed at")).to_be_visible()
    expect(page.locator("#jobs li")).to_have_count(1)
    assert resumed and resumed[0][0] == upload_url and int(resumed[0][1]) >= state["offset"] > 0, (resumed, state)
    final = page.request.get(upload_url, headers={"Authorization": f"Bearer {key}"}).json()
    assert final["complete"] and final["job_id"], final
    cancel_or_delete(page.locator("#jobs li").first)
    assert console.unexpected() == [], console.errors


def test_lost_answer_to_the_last_patch_makes_one_job(studio, media):
    """The last PATCH arrives but its answer is lost: the page finds the job (HEAD) instead of
    uploading the video again and making (and charging) a second one. The event stream is not
    available either: the bar follows the job by polling its status, forward only, to the end."""
    page, console = studio
    page.route("**/events", lambda route: route.abort())
    create_account(page)
    page.evaluate(RECORD_PROGRESS)
    creations = []

    def lose_the_job_answer(route):
        request = route.request
        if request.method == "POST":
            creations.append(request.url)
        if request.method != "PATCH":
            return route.continue_()
        answer = route.fetch()
        if answer.headers.get("moments-job-id"):
            return route.abort("connectionreset")
        return route.fulfill(response=answer)

    page.route("**/api/v1/uploads**", lose_the_job_answer)
    choose_and_make(page, media["video"], length=5)
    expect(page.locator("#jobs li")).to_have_count(1)
    wait_for_playing_highlight(page)
    assert len(creations) == 1, creations
    values = progress_values(page)
    assert values == sorted(values) and values[-1] == 100, values
    expect(page.locator("#jobs li")).to_have_count(1)
    assert console.unexpected(allowed=["net::ERR_CONNECTION_RESET", "net::ERR_FAILED"]) == [], console.errors
