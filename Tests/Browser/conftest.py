"""The studio's browser suite: a live `moments serve` on a free loopback port with its own storage,
media made by `moments sample`, and Debian's chromium driven headless by Playwright.

A missing tool fails the suite (never skips it): the moments binary (MOMENTS_BIN, default
.build/debug/moments), /usr/bin/chromium (CHROMIUM), Playwright."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench-out"
BINARY = Path(os.environ.get("MOMENTS_BIN", ROOT / ".build" / "debug" / "moments"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def workdir():
    path = Path(tempfile.mkdtemp(prefix="moments-browser-"))
    # The storage inside may be closed (0700); the folders above it must be searchable by the
    # media children's users (README: Security).
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def media(workdir):
    """10 s and 30 s 640x360 synthetic videos with shots and sound, and a file that is not a video."""
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing: build it first (swift build), or set MOMENTS_BIN")
    video = workdir / "holiday.mp4"
    subprocess.run([str(BINARY), "sample", "-o", str(video), "--duration", "10"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    longer = workdir / "weekend.mp4"
    subprocess.run([str(BINARY), "sample", "-o", str(longer), "--duration", "30"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    refused = workdir / "notes.mp4"
    refused.write_bytes(b"These are my notes, not a video.\n" * 2000)
    return {"video": video, "longer": longer, "refused": refused}


@pytest.fixture(scope="session")
def server(workdir):
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing: build it first (swift build), or set MOMENTS_BIN")
    port = free_port()
    # Jobs at the server's own priority: at the default niceness 19, compiles running beside the
    # suite would stretch each highlight to minutes.
    env = dict(os.environ, ACCOUNTS_MAX_PER_ADDRESS_PER_HOUR="0", STORAGE_MIN_FREE_BYTES="0", JOBS_NICENESS="0")
    log = open(workdir / "server.log", "wb")
    process = subprocess.Popen([str(BINARY), "serve", "--host", "127.0.0.1", "--port", str(port),
                                "--storage", str(workdir / "storage"), "--log-level", "warning"],
                               cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            break
        except OSError:
            if process.poll() is not None or time.time() > deadline:
                process.kill()
                pytest.fail(f"moments serve did not come up; see {workdir / 'server.log'}:\n"
                            + (workdir / "server.log").read_text(errors="replace")[-2000:])
            time.sleep(0.2)
    yield base
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (make test-browser installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required"])
        yield browser
        browser.close()


class Console:
    """Console errors and uncaught exceptions of a page."""

    def __init__(self, page):
        self.errors = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

    def unexpected(self, allowed=()):
        return [e for e in self.errors if not any(a in e for a in allowed)]


@pytest.fixture
def studio(browser, server):
    """A fresh browser context (its own localStorage) on the studio at 1280x800."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    context.set_default_timeout(20_000)
    page = context.new_page()
    console = Console(page)
    page.goto(server + "/")
    yield page, console
    context.close()


@pytest.fixture(scope="session")
def out_dir():
    OUT.mkdir(exist_ok=True)
    return OUT
