import OpenCombine
import ReactiveUV

// Values pushed from a subject into a bound property (`property <~ signal`, RAC's
// `RAC(target, keyPath) = signal`) and on to one observer of the property: the per-value
// cost of a binding, the most common use of a property. OpenCombine's counterpart is a
// PassthroughSubject subscribed with a CurrentValueSubject.

extension Row {
    static let propertyBind = Row(
        name: "bind",
        title: "subject→property <~ →observer of the property (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: PropertyBind.reactiveUV,
        openCombine: PropertyBind.openCombine,
        baseline: PropertyBind.baseline
    )
}

enum PropertyBind {
    static func reactiveUV(_ n: Int) -> Int {
        let source = ReactiveUV.Subject<Int>()
        let property = MutableProperty(value: 0)
        var sum = 0
        let observation = property.changes.subscribeNext { sum &+= $0 }
        let binding = property <~ source
        for i in 0..<n { source.sendNext(i) }
        binding.dispose()
        observation.dispose()
        return sum &+ property.value
    }

    static func openCombine(_ n: Int) -> Int {
        let source = PassthroughSubject<Int, Never>()
        let property = CurrentValueSubject<Int, Never>(0)
        var sum = 0
        let observation = property.dropFirst().sink { sum &+= $0 }
        let binding = source.subscribe(property)  // cancelled when released: keep it
        for i in 0..<n { source.send(i) }
        binding.cancel()
        observation.cancel()
        return sum &+ property.value
    }

    /// A setter closure that stores the value and calls the observer closure.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        var value = 0
        let observer: (Int) -> Void = opaque { sum &+= $0 }
        let set: (Int) -> Void = opaque { value = $0; observer($0) }
        for i in 0..<n { set(i) }
        return sum &+ value
    }
}
