import Configuration

/// Reading a key into the property that declares its default: `http.read("port", into: &port)`
/// keeps `port` when neither the environment nor the file sets `http.port`. With a reader scoped
/// to its section, each key is written once, in the line that reads it, beside its property.
extension ConfigReader {
    public func read(_ key: ConfigKey, into value: inout String) { value = string(forKey: key, default: value) }
    public func read(_ key: ConfigKey, into value: inout Bool) { value = bool(forKey: key, default: value) }
    public func read(_ key: ConfigKey, into value: inout [String]) { value = stringArray(forKey: key, default: value) }
    public func read(_ key: ConfigKey, into value: inout Int) { value = int(forKey: key, default: value) }
    public func read(_ key: ConfigKey, into value: inout Int64) { value = Int64(int(forKey: key, default: Int(value))) }
    public func read(_ key: ConfigKey, into value: inout Double) { value = double(forKey: key, default: value) }
    /// An optional setting: unset keeps the default (nil usually means "no limit").
    public func read(_ key: ConfigKey, into value: inout Double?) { value = double(forKey: key) ?? value }

    /// A value outside `bounds` is taken as the nearest bound.
    public func read(_ key: ConfigKey, into value: inout Int, in bounds: ClosedRange<Int>) {
        value = int(forKey: key, default: value).clamped(to: bounds)
    }

    public func read(_ key: ConfigKey, into value: inout Int64, in bounds: ClosedRange<Int64>) {
        value = Int64(int(forKey: key, default: Int(value))).clamped(to: bounds)
    }

    public func read(_ key: ConfigKey, into value: inout Double, in bounds: ClosedRange<Double>) {
        value = double(forKey: key, default: value).clamped(to: bounds)
    }
}

extension Comparable {
    /// In the order the settings always clamped (`min(upper, max(lower, value))`), so a NaN still
    /// becomes the lower bound.
    fileprivate func clamped(to bounds: ClosedRange<Self>) -> Self {
        min(bounds.upperBound, max(bounds.lowerBound, self))
    }
}
