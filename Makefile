# Moments — the two commands a new user needs:
#   make run    set up what is missing, build, and run Moments on its embedded defaults
#   make test   set up what is missing, build, and run the tests
SHELL := /bin/bash
SWIFT ?= swift
export SWIFT
APT_PACKAGES := libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev libsqlite3-dev pkg-config
STORAGE_PATH ?= Storage

.PHONY: run test test-tools test-browser browser-tools setup build release bench clean fuzz format

# Installs the system libraries only when pkg-config cannot find them (sudo when not root).
setup:
	@if ! pkg-config --exists libavformat libavcodec libavutil libswscale libswresample sqlite3 2>/dev/null; then \
		echo "Installing FFmpeg and SQLite development packages: $(APT_PACKAGES)"; \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES); \
	fi
	@scripts/install-facedetect
	@command -v ffmpeg >/dev/null 2>&1 || echo "note: the ffmpeg CLI is not installed; only scripts/bench-media needs it (apt-get install ffmpeg)"

build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build -c release

# The HTTP service on http://127.0.0.1:8000 with the embedded defaults (SQLite + Storage/).
# As root it runs the full sandbox; as another user (a laptop) the media children run as that
# user without their own cgroup (isolation.allowWeaker, said at start-up): docs/security.md.
run: release
	@if [ "$$(id -u)" -ne 0 ] && [ -z "$${ISOLATION_ALLOW_WEAKER:-}" ]; then \
		echo "note: not root, so media children run as $$(id -un) (ISOLATION_ALLOW_WEAKER=user,cgroup); run as root for the full sandbox"; \
		export ISOLATION_ALLOW_WEAKER=user,cgroup; fi; \
	exec .build/release/moments serve

# opentimelineio and xmllint check the timeline exports (OTIO read back, FCPXML against a DTD);
# tuspy (the tus project's Python client) drives the resumable-upload tests as a third-party client;
# curl drives the IETF draft and SSE tests; ffprobe reads picture types in the phone-media tests;
# hypercorn, PyJWT and cryptography run scripts/apns-standin, the push tests' local APNs (HTTP/2 over TLS).
test-tools:
	@python3 -c 'import tusclient' 2>/dev/null || { echo "Installing tuspy with pip"; \
		python3 -m pip install --quiet tuspy 2>/dev/null || python3 -m pip install --quiet --break-system-packages tuspy; }
	@python3 -c 'import hypercorn, jwt, cryptography' 2>/dev/null || { echo "Installing hypercorn, PyJWT and cryptography with pip (the push tests' APNs stand-in)"; \
		python3 -m pip install --quiet hypercorn pyjwt cryptography 2>/dev/null || python3 -m pip install --quiet --break-system-packages hypercorn pyjwt cryptography; }
	@python3 -c 'import opentimelineio' 2>/dev/null || { echo "Installing opentimelineio with pip (the timeline tests read the OTIO export back)"; \
		python3 -m pip install --quiet opentimelineio 2>/dev/null || python3 -m pip install --quiet --break-system-packages opentimelineio; }
	@command -v xmllint >/dev/null 2>&1 || { echo "Installing xmllint (the timeline tests validate the FCPXML export)"; SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libxml2-utils >/dev/null; }
	@command -v curl >/dev/null 2>&1 || { SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; $$SUDO apt-get install -y -qq curl; }
	@command -v ffprobe >/dev/null 2>&1 || { echo "Installing the ffmpeg CLI (the phone-media tests read picture types with ffprobe)"; \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq ffmpeg >/dev/null; }

# The tests' synthetic videos, each encoded once per run (see Sources/MediaSynth/SynthCache.swift):
# the service tests ask for the same ones on both engine sets.
SYNTH_CACHE := $(CURDIR)/.build/synth-cache
# The tests in tiers (scripts/test-tiers, which times each and prints the times at the end): the
# unit tier (the router suites on a throw-away SQLite store, the media suites and each domain
# module's own suites); then, with a throw-away PostgreSQL cluster and moto's S3 server (installed
# when missing, started on free loopback ports, stopped after; see scripts/with-test-servers), the
# service suites (live servers, real child processes and media) on the embedded engines (SQLite +
# filesystem), then the store and object-storage suites; then the service suites that depend on the
# engines again on PostgreSQL + S3, with the web studio's browser tests beside them.
test: export MOMENTS_SYNTH_CACHE = $(SYNTH_CACHE)
test: setup test-tools browser-tools
	scripts/check-imports
	scripts/check-wording
	scripts/long-functions
	@scripts/people-footage >/dev/null
	$(SWIFT) build --build-tests
	scripts/test-tiers

# The web studio in a browser (Tests/Browser, pytest): Playwright for Python driving Debian's
# chromium headless against a live `moments serve` (the debug build, as `make test` builds it;
# MOMENTS_BIN to use another).
# Installs what is missing: chromium with apt, playwright and pytest with pip (Playwright's own
# browser download is not used). Screenshots land in bench-out/.
test-browser: browser-tools
	$(SWIFT) build --build-tests
	PYTHONDONTWRITEBYTECODE=1 python3 -m pytest Tests/Browser -p no:cacheprovider

browser-tools:
	@command -v chromium >/dev/null 2>&1 || { echo "Installing chromium (the studio's browser tests)"; SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@python3 -c 'import playwright, pytest' 2>/dev/null || { echo "Installing playwright and pytest with pip"; \
		python3 -m pip install --quiet playwright pytest 2>/dev/null || python3 -m pip install --quiet --break-system-packages playwright pytest; }
	@python3 -c 'import axe_playwright_python' 2>/dev/null || { echo "Installing axe-core 4.12.1 (axe-playwright-python 0.1.8, its axe.min.js checked by hash in the tests) with pip"; \
		python3 -m pip install --quiet axe-playwright-python==0.1.8 2>/dev/null || python3 -m pip install --quiet --break-system-packages axe-playwright-python==0.1.8; }

# Benchmarks (need the ffmpeg CLI; bench-analysis also PyPI for PySceneDetect; bench-service wrk and curl;
# bench-phone libx265 and zscale in the ffmpeg CLI, and curl; bench-uploads curl and tuspy; bench-reuploads curl).
bench: release
	scripts/bench-media
	scripts/bench-analysis
	scripts/bench-service
	scripts/bench-isolation
	scripts/bench-scaleout
	scripts/bench-phone
	scripts/bench-uploads
	scripts/bench-recut
	scripts/bench-jumpcuts
	scripts/bench-reuploads

# Fuzzes the probe and a bounded analysis decode with libFuzzer for FUZZ_SECONDS (a separate
# build in .build/fuzz, linked with lld; Swift code is instrumented, FFmpeg is the system's, so
# coverage guides only through Moments' code). The seed corpus is generated from MediaSynth by the
# plain build of the same tool; crashes, timeouts and runaway allocations land in .build/fuzz/findings/.
FUZZ_SECONDS ?= 120
FUZZ_DIR := .build/fuzz
fuzz: setup
	$(SWIFT) build --build-path $(FUZZ_DIR) --product ProbeFuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
	$(SWIFT) build --product ProbeFuzz
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/findings
	.build/debug/ProbeFuzz seed $(FUZZ_DIR)/seeds
	@status=0; $(FUZZ_DIR)/debug/ProbeFuzz $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds -max_total_time=$(FUZZ_SECONDS) \
		-timeout=20 -rss_limit_mb=3072 -max_len=262144 -detect_leaks=0 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_DIR)/findings/ 2>&1 | tail -n 25 || status=$$?; \
	findings=$$(ls $(FUZZ_DIR)/findings); \
	if [ -n "$$findings" ]; then echo "fuzz findings (replay: $(FUZZ_DIR)/debug/ProbeFuzz FILE):"; ls -l $(FUZZ_DIR)/findings; exit 1; \
	else echo "fuzz: no crash, hang or runaway allocation in $(FUZZ_SECONDS) s (corpus: $$(ls $(FUZZ_DIR)/corpus | wc -l) inputs)"; fi

# Lays out the Swift sources with the toolchain's swift-format and the committed .swift-format
# (4 spaces, 120 columns; layout only, no rewriting rules).
format:
	$(SWIFT) format format --in-place --recursive --parallel --configuration .swift-format Sources Tests Package.swift

clean:
	rm -rf .build
