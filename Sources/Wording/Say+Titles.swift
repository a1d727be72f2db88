extension Say {
    /// The `title` of the problems whose title is not their status's reason phrase.
    public enum Title {
        public static let jobNotFound = "Job not found"
        public static let uploadNotFound = "Upload not found"
        public static let keyNotFound = "Key not found"
        public static let deviceNotFound = "Device not found"
        public static let tooManyDevices = "Too many devices"
        public static let pushOff = "Push notifications are off"
        public static let accountDisabled = "Account disabled"
        public static let noWebhook = "No webhook"
        public static let crossSite = "Cross-site request refused"
    }
}
