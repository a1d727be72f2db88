import MediaEngine
import CFFmpeg
import FFmpeg
import Foundation

/// One keyframe group's share of a group-parallel pass: its packets (references, no copy of the
/// data) and the small pictures they decode to. The sampled pass takes a fixed burst per group; the
/// anchors pass every packet of the group, so its slots grow (up to the pass's bound on a group)
/// and are kept for the next group. A slot belongs to the demuxing thread until submitted and to
/// one worker until done.
final class GroupJob: @unchecked Sendable {
    private(set) var packets: [Packet]
    private(set) var pictures: [Frame]
    /// Take every packet and picture of the group (the anchors pass), growing the slots.
    let grows: Bool
    let width: Int
    let height: Int
    var index = 0
    var keyTime = 0.0
    var count = 0
    /// Anchors pass: the presentation time of each packet held, and their bytes.
    var packetTimes: [Double] = []
    var bytes = 0
    // Filled by the worker.
    var times: [Double]
    var produced = 0
    var framesDecoded = 0
    var damaged = 0
    var decodedWidth = 0
    var decodedHeight = 0
    var error: MediaError?
    var done = false
    // Filled by the demuxing thread at the group's end, for onGroup.
    var record: GOPRecord?

    init(packets: Int, pictures: Int, width: Int, height: Int, grows: Bool = false) throws(MediaError) {
        var p: [Packet] = []
        for _ in 0..<packets { p.append(try Packet()) }
        self.packets = p
        var f: [Frame] = []
        for _ in 0..<pictures { f.append(try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P)) }
        self.pictures = f
        self.width = width
        self.height = height
        self.grows = grows
        times = [Double](repeating: 0, count: pictures)
    }

    /// The slot for the group's next packet; nil when the job is full (a job that `grows` only
    /// grows: its caller bounds the group).
    func nextPacket() throws(MediaError) -> Packet? {
        if count < packets.count { return packets[count] }
        guard grows else { return nil }
        packets.append(try Packet())
        return packets[count]
    }

    /// The picture slot for the next decoded frame (worker side); nil when the job holds no more.
    func nextPicture() throws(MediaError) -> Frame? {
        if produced < pictures.count { return pictures[produced] }
        guard grows else { return nil }
        pictures.append(try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P))
        times.append(0)
        return pictures[produced]
    }

    /// Ready for another group (the packets' data references are dropped).
    func reset(index: Int, keyTime: Double) {
        for i in 0..<count { packets[i].unref() }
        self.index = index
        self.keyTime = keyTime
        count = 0
        produced = 0
        framesDecoded = 0
        damaged = 0
        decodedWidth = 0
        decodedHeight = 0
        error = nil
        done = false
        record = nil
        packetTimes.removeAll(keepingCapacity: true)
        bytes = 0
    }
}

/// Decodes keyframe groups on their own threads, one single-threaded decoder per core: groups
/// start at keyframes, so they decode independently, and a burst (a costly keyframe and the few
/// frames predicted from it) gains little from frame threads but everything from running beside
/// the next group's.
final class GroupDecodeWorkers: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [GroupJob] = []
    private var stopping = false
    private var running = 0
    private let decoders: [CodecContext]
    /// One per decoder, used only on its worker's thread.
    private let converters: [VideoConverter]
    private let timeBase: AVRational
    private let start: Double
    private let width: Int
    private let height: Int
    private let path: String

    init(
        stream: StreamHandle, path: String, start: Double, width: Int, height: Int, options: AnalysisOptions,
        workers: Int, skipFrame: AVDiscard = AVDISCARD_DEFAULT
    ) throws(MediaError) {
        var list: [CodecContext] = []
        var converting: [VideoConverter] = []
        for _ in 0..<max(1, workers) {
            converting.append(try VideoConverter.analysis(width: width, height: height, stream: stream))
            list.append(
                try CodecContext.decoder(for: stream, path: path, threads: 1) { c in
                    if options.skipLoopFilter { c.pointee.skip_loop_filter = AVDISCARD_ALL }
                    c.pointee.skip_frame = skipFrame
                    c.pointee.flags2 |= AV_CODEC_FLAG2_FAST
                })
        }
        decoders = list
        converters = converting
        timeBase = stream.timeBase
        self.start = start
        self.width = width
        self.height = height
        self.path = path
        for index in decoders.indices {
            running += 1
            let thread = Thread { [self] in work(decoders[index], converter: converters[index]) }
            thread.name = "moments-group-decode"
            thread.start()
        }
    }

    /// Queues a filled job.
    func submit(_ job: GroupJob) {
        condition.lock()
        queue.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Blocks until `job` is done.
    func wait(_ job: GroupJob) {
        condition.lock()
        while !job.done { condition.wait() }
        condition.unlock()
    }

    /// Lets the workers finish what they hold and waits for their threads to end.
    func stop() {
        condition.lock()
        stopping = true
        queue.removeAll()
        condition.broadcast()
        while running > 0 { condition.wait() }
        condition.unlock()
    }

    private func next() -> GroupJob? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && !stopping { condition.wait() }
        if stopping { return nil }
        return queue.removeFirst()
    }

    private func work(_ decoder: CodecContext, converter: VideoConverter) {
        let decoded = try? Frame()
        while let job = next() {
            if let decoded {
                do throws(MediaError) {
                    try decode(job, decoder: decoder, converter: converter, decoded: decoded)
                } catch {
                    job.error = error
                }
            } else {
                job.error = MediaError(.ffmpeg, operation: "av_frame_alloc", detail: "out of memory")
            }
            condition.lock()
            job.done = true
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        running -= 1
        condition.broadcast()
        condition.unlock()
    }

    private func decode(
        _ job: GroupJob, decoder: CodecContext, converter: VideoConverter, decoded: Frame
    ) throws(MediaError) {
        decoder.flushBuffers()
        defer { decoder.flushBuffers() }
        func receive() throws(MediaError) {
            var failures = 0
            while true {
                let r = decoder.receive(decoded)
                if r == FFmpegError.again || r == FFmpegError.eof { return }
                if FFmpegError.isDamage(r) {
                    job.damaged += 1
                    failures += 1
                    if failures > 16 { return }
                    continue
                }
                try check(r, "avcodec_receive_frame (\(decoder.name))", path: path, context: decoder.logKey)
                defer { decoded.unref() }
                job.framesDecoded += 1
                if decoded.isDamaged { job.damaged += 1 }
                if decoded.width > MediaLimits.maxSide || decoded.height > MediaLimits.maxSide
                    || decoded.width * decoded.height > MediaLimits.maxPixels
                {
                    throw MediaError(
                        .dimensionsTooLarge, operation: "check decoded picture size", path: path,
                        detail:
                            "the video holds a \(decoded.width)x\(decoded.height) picture; the limit is \(MediaLimits.maxSide) px a side and \(MediaLimits.maxPixels / 1_000_000) Mpixel"
                    )
                }
                let ts = decoded.bestEffortTimestamp
                guard ts != MediaTime.noPTS else { continue }
                let time = MediaTime.seconds(ts, timeBase) - start
                guard time >= job.keyTime - 1e-6, job.produced == 0 || time > job.times[job.produced - 1] else {
                    continue
                }
                guard let picture = try job.nextPicture() else { continue }
                try picture.makeWritable()
                try converter.convert(decoded, into: picture)
                job.times[job.produced] = time
                job.decodedWidth = decoded.width
                job.decodedHeight = decoded.height
                job.produced += 1
            }
        }
        for i in 0..<job.count {
            let rc = decoder.send(job.packets[i])
            if FFmpegError.isDamage(rc) { job.damaged += 1; continue }
            if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
                throw MediaError.ffmpeg(
                    rc, "avcodec_send_packet (\(decoder.name))", path: path, context: decoder.logKey)
            }
            try receive()
        }
        _ = decoder.send(nil as Packet?)
        try receive()
    }
}
