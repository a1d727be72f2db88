# Moments — the two commands a new user needs:
#   make run    set up what is missing, build, and run Moments on its embedded defaults
#   make test   set up what is missing, build, and run the tests
SHELL := /bin/bash
SWIFT ?= swift
APT_PACKAGES := libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev libsqlite3-dev pkg-config
STORAGE_PATH ?= Storage

.PHONY: run test setup build release bench clean

# Installs the system libraries only when pkg-config cannot find them (sudo when not root).
setup:
	@if ! pkg-config --exists libavformat libavcodec libavutil libswscale libswresample sqlite3 2>/dev/null; then \
		echo "Installing FFmpeg and SQLite development packages: $(APT_PACKAGES)"; \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES); \
	fi
	@command -v ffmpeg >/dev/null 2>&1 || echo "note: the ffmpeg CLI is not installed; only scripts/bench-media needs it (apt-get install ffmpeg)"

build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build -c release

# The HTTP service on http://127.0.0.1:8000 with the embedded defaults (SQLite + Storage/).
run: release
	.build/release/moments serve

# Two runs: the media tests do long synchronous work on Swift's cooperative threads (as many as
# cores), which would starve the live HTTP servers the service tests talk to.
test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip ServerTests
	$(SWIFT) test --skip-build --filter ServerTests

# Benchmarks (need the ffmpeg CLI; bench-analysis also PyPI for PySceneDetect; bench-service wrk and curl).
bench: release
	scripts/bench-media
	scripts/bench-analysis
	scripts/bench-service

clean:
	rm -rf .build
