import CFFmpeg
import FFmpeg

extension FormatCatalog {
    /// The catalog of the linked FFmpeg, asked of its libraries.
    public static func current() -> FormatCatalog {
        var containers: [Entry] = []
        var opaque: UnsafeMutableRawPointer?
        while let demuxer = av_demuxer_iterate(&opaque) {
            let format = demuxer.pointee
            guard let cName = format.name else { continue }
            let name = String(cString: cName)
            guard ContainerPolicy.accepts(name) else { continue }
            let extensions = format.extensions.map { String(cString: $0).split(separator: ",").map(String.init) } ?? []
            containers.append(
                Entry(
                    name: name, longName: format.long_name.map { String(cString: $0) } ?? name,
                    extensions: extensions.isEmpty ? nil : extensions))
        }
        var video: [Int32: Entry] = [:], audio: [Int32: Entry] = [:]
        opaque = nil
        while let codec = av_codec_iterate(&opaque) {
            guard av_codec_is_decoder(codec) != 0 else { continue }
            let id = codec.pointee.id
            let name = String(cString: avcodec_get_name(id))
            let longName = avcodec_descriptor_get(id)?.pointee.long_name.map { String(cString: $0) } ?? name
            let entry = Entry(name: name, longName: longName, extensions: nil)
            switch codec.pointee.type {
            case AVMEDIA_TYPE_VIDEO: video[Int32(id.rawValue)] = entry
            case AVMEDIA_TYPE_AUDIO: audio[Int32(id.rawValue)] = entry
            default: break
            }
        }
        return FormatCatalog(
            containers: containers.sorted { $0.name < $1.name },
            videoCodecs: video.values.sorted { $0.name < $1.name },
            audioCodecs: audio.values.sorted { $0.name < $1.name })
    }
}
