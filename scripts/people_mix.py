#!/usr/bin/env python3
"""Builds the people videos of the people tests and scripts/bench-people from the footage
scripts/people-footage fetches (ffmpeg CLI): people talking between livelier scenes with no one in
them, and a wide shot with a person on one side and action on the other.

    people_mix.py FOOTAGE OUT.mp4 mix tune|held-out|test [--height H]
    people_mix.py FOOTAGE OUT.mp4 wide tune|held-out [--height H]

Prints a JSON line: the parts (start, end, people or not, scene name) in output seconds.
The halves are split by source clip: tune uses carphone (people), bikes and tree (no one) and a
synthetic ball; held-out uses Megamind and movie-hello (people: a webcam face beside a still
screencast), bigbuckbunny and vtest (no one) and a launch-like synthetic plume; `test` mixes both
(the Swift tests' video: a car, a dialogue and the screencast, as in the issue's set).
"""
import json, os, subprocess, sys

W, H, FPS = 640, 360, 30


def part(footage, spec, height):
    """One part as ffmpeg inputs and a filter producing [v] and [a] labels of one size and rate."""
    w = height * 16 // 9 // 2 * 2
    fit = (f"scale={w}:{height}:force_original_aspect_ratio=decrease,pad={w}:{height}:(ow-iw)/2:(oh-ih)/2,"
           f"setsar=1,fps={FPS},format=yuv420p")
    kind = spec["kind"]
    quiet = "anoisesrc=color=pink:amplitude=0.01:sample_rate=48000"
    lively = ("aevalsrc='0.5*sin(2*PI*(300+200*mod(floor(t*6),4))*t)*lt(mod(t,0.25),0.12)+"
              "0.08*sin(2*PI*90*t)':s=48000")
    d = spec["seconds"]
    if kind == "clip":
        path = os.path.join(footage, spec["file"])
        loop = ["-stream_loop", "-1"] if spec.get("loop") else []
        inputs = loop + ["-ss", str(spec.get("from", 0)), "-t", str(d), "-i", path]
        video = f"[{{i}}:v]{spec.get('pre', '')}{fit}[v{{n}}]"
        if spec.get("audio") == "own":
            audio = f"[{{i}}:a]aresample=48000,aformat=channel_layouts=stereo,apad,atrim=0:{d}[a{{n}}]"
            return inputs, video, audio, []
        extra = ["-f", "lavfi", "-t", str(d), "-i", lively if spec.get("audio") == "lively" else quiet]
        audio = f"[{{j}}:a]aformat=channel_layouts=stereo,atrim=0:{d}[a{{n}}]"
        return inputs, video, audio, extra
    if kind == "inset":
        # A small face (a webcam inset) over a busy background.
        back, face = os.path.join(footage, spec["back"]), os.path.join(footage, spec["file"])
        inputs = ["-t", str(d), "-i", back, "-stream_loop", "-1", "-t", str(d), "-i", face]
        video = (f"[{{i}}:v]{fit}[b{{n}}];[{{k}}:v]scale=-2:{height // 3},fps={FPS}[f{{n}}];"
                 f"[b{{n}}][f{{n}}]overlay=W-w-16:H-h-16:shortest=1,format=yuv420p[v{{n}}]")
        extra = ["-f", "lavfi", "-t", str(d), "-i", quiet]
        audio = f"[{{j}}:a]aformat=channel_layouts=stereo,atrim=0:{d}[a{{n}}]"
        return inputs, video, audio, extra
    if kind == "synth":
        # A bright ball thrown across a dark field, or a rising plume: lively motion, no one in it.
        w = height * 16 // 9 // 2 * 2
        if spec["what"] == "ball":
            expr = (f"geq=lum='if(lt(hypot(X-(W*mod(T*0.6,1)),Y-(H*(0.8-0.6*abs(sin(T*3))))),H/12),235,30+20*sin(X/9))'"
                    f":cb=128+40*sin(T):cr=128")
        else:
            expr = (f"geq=lum='if(lt(hypot((X-W/2)*1.5,Y-(H-T*H/4)),H/6+T*8),220,20+Y/8)'"
                    f":cb=110:cr=150+30*sin(T*5)")
        inputs = ["-f", "lavfi", "-t", str(d), "-i", f"color=c=black:s={w}x{height}:r={FPS}"]
        video = f"[{{i}}:v]{expr},format=yuv420p[v{{n}}]"
        extra = ["-f", "lavfi", "-t", str(d), "-i", lively]
        audio = f"[{{j}}:a]aformat=channel_layouts=stereo,atrim=0:{d}[a{{n}}]"
        return inputs, video, audio, extra
    raise ValueError(kind)


MIXES = {
    "tune": [
        dict(kind="clip", file="bikes.mp4", seconds=8, audio="lively", people=False, scene="bikes"),
        dict(kind="clip", file="carphone_pristine.mp4", seconds=8, loop=True, people=True, scene="car"),
        dict(kind="synth", what="ball", seconds=7, people=False, scene="ball"),
        dict(kind="inset", back="tree.avi", file="carphone_pristine.mp4", seconds=7, people=True, scene="webcam",
             pre=""),
        dict(kind="clip", file="bikes.mp4", **{"from": 5}, seconds=5, audio="lively", people=False,
             scene="bikes-2", pre="hflip,"),
    ],
    "held-out": [
        dict(kind="clip", file="bigbuckbunny.mp4", seconds=5.3, audio="own", people=False, scene="bunny"),
        dict(kind="clip", file="Megamind.avi", seconds=11.2, audio="own", people=True, scene="dialogue"),
        dict(kind="synth", what="plume", seconds=7, people=False, scene="launch"),
        dict(kind="inset", back="vtest.avi", file="Megamind.avi", seconds=7, people=True, scene="webcam"),
        dict(kind="clip", file="vtest.avi", **{"from": 30}, seconds=8, audio="lively", people=False, scene="street"),
        dict(kind="clip", file="movie-hello.mp4", seconds=8.2, audio="own", people=True, scene="screencast"),
    ],
}
MIXES["test"] = [
    MIXES["tune"][0], MIXES["tune"][1], MIXES["tune"][2], MIXES["held-out"][1], MIXES["held-out"][0],
    MIXES["held-out"][5],
]
WIDE = {
    # A person talking in the left third, a ball thrown on the right: one 1920x1080 shot.
    "tune": dict(face="carphone_pristine.mp4", seconds=12),
    "held-out": dict(face="Megamind.avi", seconds=11),
}


def build_mix(footage, out, name, height):
    args, filters, labels, parts = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y"], [], "", []
    count, t = 0, 0.0
    for n, spec in enumerate(MIXES[name]):
        inputs, video, audio, extra = part(footage, spec, height)
        i = count
        count += sum(1 for a in inputs if a == "-i")
        k = i + 1 if spec["kind"] == "inset" else i
        j = count
        count += sum(1 for a in extra if a == "-i")
        args += inputs + extra
        filters.append(video.format(i=i, k=k, n=n))
        filters.append(audio.format(i=i, j=j, n=n))
        labels += f"[v{n}][a{n}]"
        parts.append(dict(start=round(t, 3), end=round(t + spec["seconds"], 3), people=spec["people"],
                          scene=spec["scene"]))
        t += spec["seconds"]
    filters.append(f"{labels}concat=n={len(MIXES[name])}:v=1:a=1[v][a]")
    args += ["-filter_complex", ";".join(filters), "-map", "[v]", "-map", "[a]", "-c:v", "libx264", "-preset",
             "veryfast", "-crf", "20", "-g", "60", "-c:a", "aac", "-b:a", "128k", out]
    subprocess.run(args, check=True)
    return parts


def build_wide(footage, out, name, height):
    spec = WIDE[name]
    d, w = spec["seconds"], height * 16 // 9 // 2 * 2
    face = os.path.join(footage, spec["face"])
    # A bright ball bouncing about the right half over a dark field (drawbox: cheap at 1080p).
    size = height // 8
    ball = (f"drawbox=x='iw*(0.6+0.3*abs(sin(t*1.7)))':y='ih*(0.7-0.55*abs(sin(t*3.1)))':w={size}:h={size}:"
            f"color=0xF0F0E0:t=fill")
    graph = (f"[0:v]{ball},format=yuv420p[bg];[1:v]scale=-2:{height * 2 // 3},fps={FPS}[p];"
             f"[bg][p]overlay=W/6-w/2:(H-h)/2:shortest=1,format=yuv420p[v]")
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-t", str(d), "-i",
                    f"color=c=0x283040:s={w}x{height}:r={FPS}", "-stream_loop", "-1", "-t", str(d), "-i", face,
                    "-f", "lavfi", "-t", str(d), "-i", "anoisesrc=color=pink:amplitude=0.05:sample_rate=48000",
                    "-filter_complex", graph, "-map", "[v]", "-map", "2:a", "-c:v", "libx264", "-preset",
                    "veryfast", "-crf", "20", "-g", "60", "-c:a", "aac", out], check=True)
    return [dict(start=0, end=d, people=True, scene="wide", face_side="left")]


def main():
    footage, out, what, name = sys.argv[1:5]
    height = int(sys.argv[sys.argv.index("--height") + 1]) if "--height" in sys.argv else H
    parts = build_mix(footage, out, name, height) if what == "mix" else build_wide(footage, out, name, height)
    print(json.dumps(dict(parts=parts)))


if __name__ == "__main__":
    main()
