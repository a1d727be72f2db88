/// A DTD for exactly the part of FCPXML 1.10 that `TimelineExport` writes, written for these
/// tests from Apple's public FCPXML reference (element names, content order and attribute value
/// sets as that reference documents them). It is stricter than Final Cut Pro's own DTD: it lists
/// only the children and attributes the exporter emits, so a stray element or attribute, or one
/// out of order, fails validation here. Apple's DTD is not redistributable and is not included.
enum FCPXMLSubsetDTD {
    static let text = """
        <!-- Moments timeline export: the FCPXML 1.10 subset it writes. -->

        <!-- Times are rational seconds, "N/Ds" or "Ns"; XML DTDs cannot check that, the tests do. -->
        <!ENTITY % time "CDATA">

        <!-- Document: resources, then a library with one event holding one project. -->
        <!ELEMENT fcpxml (resources, library)>
        <!ATTLIST fcpxml version CDATA #FIXED "1.10">

        <!-- Resources: the sequence and source formats, the source asset, transition effects. -->
        <!ELEMENT resources (format+, asset, effect*)>

        <!-- A video format: frame duration and picture size. -->
        <!ELEMENT format EMPTY>
        <!ATTLIST format
            id ID #REQUIRED
            frameDuration %time; #REQUIRED
            width CDATA #REQUIRED
            height CDATA #REQUIRED>

        <!-- The original upload; its file is named by a media representation. -->
        <!ELEMENT asset (media-rep)>
        <!ATTLIST asset
            id ID #REQUIRED
            name CDATA #REQUIRED
            start %time; #REQUIRED
            duration %time; #REQUIRED
            hasVideo (0 | 1) #REQUIRED
            format IDREF #REQUIRED
            videoSources CDATA #IMPLIED
            hasAudio (0 | 1) #REQUIRED
            audioSources CDATA #IMPLIED>

        <!ELEMENT media-rep EMPTY>
        <!ATTLIST media-rep
            kind (original-media | proxy-media) #REQUIRED
            src CDATA #REQUIRED>

        <!-- A built-in effect used by the transitions. -->
        <!ELEMENT effect EMPTY>
        <!ATTLIST effect
            id ID #REQUIRED
            name CDATA #REQUIRED
            uid CDATA #REQUIRED>

        <!ELEMENT library (event)>
        <!ELEMENT event (project)>
        <!ATTLIST event name CDATA #REQUIRED>
        <!ELEMENT project (sequence)>
        <!ATTLIST project name CDATA #REQUIRED>

        <!ELEMENT sequence (spine)>
        <!ATTLIST sequence
            format IDREF #REQUIRED
            duration %time; #REQUIRED
            tcStart %time; #REQUIRED
            tcFormat (DF | NDF) #REQUIRED
            audioLayout (mono | stereo | surround) #IMPLIED
            audioRate (32k | 44.1k | 48k | 88.2k | 96k | 176.4k | 192k) #IMPLIED>

        <!-- The primary storyline: clips, with a transition between two of them at a dissolve. -->
        <!ELEMENT spine (asset-clip | transition)*>

        <!-- One segment of the asset; the reframe as a conform then a transform. -->
        <!ELEMENT asset-clip (adjust-conform?, adjust-transform?)>
        <!ATTLIST asset-clip
            ref IDREF #REQUIRED
            offset %time; #REQUIRED
            name CDATA #REQUIRED
            start %time; #REQUIRED
            duration %time; #REQUIRED
            format IDREF #REQUIRED
            tcFormat (DF | NDF) #REQUIRED>

        <!ELEMENT adjust-conform EMPTY>
        <!ATTLIST adjust-conform type (fit | fill | none) #REQUIRED>

        <!-- position: "x y" in percent of the frame height; scale: "x y". -->
        <!ELEMENT adjust-transform EMPTY>
        <!ATTLIST adjust-transform
            position CDATA #REQUIRED
            scale CDATA #REQUIRED>

        <!ELEMENT transition (filter-video, filter-audio?)>
        <!ATTLIST transition
            name CDATA #REQUIRED
            offset %time; #REQUIRED
            duration %time; #REQUIRED>

        <!ELEMENT filter-video EMPTY>
        <!ATTLIST filter-video
            ref IDREF #REQUIRED
            name CDATA #REQUIRED>

        <!ELEMENT filter-audio EMPTY>
        <!ATTLIST filter-audio
            ref IDREF #REQUIRED
            name CDATA #REQUIRED>

        """
}
