/// One source's queue in a `zip`: the values not yet paired, and whether the source has
/// completed. A value type kept inline in the zip's state, so a push and a pop are plain
/// array operations (amortized: the array is emptied, keeping its capacity, whenever its
/// last value is taken, so a zip whose sources keep pace never grows it).
@usableFromInline
struct ZipQueue<Element> {
    @usableFromInline var items: [Element] = []
    @usableFromInline var head = 0
    /// Whether the source has completed.
    @usableFromInline var completed = false

    @inlinable
    init() {}

    /// Whether no value is waiting.
    @inlinable
    var isEmpty: Bool { head == items.count }

    /// Whether the source has completed with nothing queued: RAC's zip completes then.
    @inlinable
    var isFinished: Bool { completed && head == items.count }

    @inlinable
    mutating func push(_ value: Element) { items.append(value) }

    /// Takes the oldest value; the queue must not be empty.
    @inlinable
    mutating func pop() -> Element {
        let value = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return value
    }
}
