import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Probe")
struct ProbeTests {
    @Test("reports container, duration, streams and colour of a plain file")
    func plainFile() throws {
        let dir = Scratch()
        let path = try dir.video { $0.duration = 3 }
        let info = try Probe.probe(path)
        #expect(info.container.contains("mp4"))
        #expect(abs(info.duration - 3) < 0.05)
        #expect(info.fileSize > 0)
        #expect(info.bitRate != nil)
        #expect(info.video.codec == "h264")
        #expect(info.video.codedWidth == 320 && info.video.codedHeight == 240)
        #expect(info.video.displayWidth == 320 && info.video.displayHeight == 240)
        #expect(info.video.rotation == 0)
        #expect(info.video.pixelFormat == "yuv420p" && info.video.bitDepth == 8)
        #expect(abs(info.video.frameRate - 30) < 0.01)
        #expect(!info.video.isVariableFrameRate)
        #expect(info.video.colorTransfer == "bt709" && !info.video.isHDR)
        #expect(info.audio.count == 1)
        #expect(
            info.audio.first?.codec == "aac" && info.audio.first?.sampleRate == 48_000
                && info.audio.first?.channels == 2)
    }

    @Test("reads rotation from the display matrix and swaps the display size", arguments: [90, 180, 270])
    func rotation(degrees: Int) throws {
        let dir = Scratch()
        let path = try dir.video {
            $0.rotation = degrees; $0.duration = 1
        }
        let info = try Probe.probe(path)
        #expect(info.video.rotation == degrees)
        let swapped = degrees % 180 != 0
        #expect(info.video.displayWidth == (swapped ? 240 : 320))
        #expect(info.video.displayHeight == (swapped ? 320 : 240))
    }

    @Test("tells variable frame rate from constant")
    func variableFrameRate() throws {
        let dir = Scratch()
        let vfr = try dir.video("vfr.mp4") {
            $0.variableFrameRate = true; $0.duration = 3
        }
        #expect(try Probe.probe(vfr).video.isVariableFrameRate)
        let cfr = try dir.video("cfr.mp4") { $0.duration = 3 }
        #expect(try !Probe.probe(cfr).video.isVariableFrameRate)
    }

    @Test("reports 10-bit depth and the PQ transfer of HDR video")
    func hdr() throws {
        let dir = Scratch()
        let path = try dir.video {
            $0.hdr = true; $0.duration = 1
        }
        let info = try Probe.probe(path)
        #expect(info.video.bitDepth == 10)
        #expect(info.video.colorTransfer == "smpte2084")
        #expect(info.video.isHDR)
    }

    @Test("a video without sound has no audio streams")
    func silentVideo() throws {
        let dir = Scratch()
        let path = try dir.video {
            $0.audio = false; $0.duration = 1
        }
        #expect(try Probe.probe(path).audio.isEmpty)
    }
}
