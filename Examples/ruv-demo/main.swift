// ruv-demo: a timer and a signal pipeline on the main loop.
//
// Every 100 ms the interval signal ticks; the pipeline numbers the ticks, keeps the even
// ones, and stops after five of them. Meanwhile a subject fed by the same ticks shows the
// hot side: two subscribers share it. The main loop runs until the pipeline completes.
import ReactiveUV

let ticks = Signal.interval(0.1, on: Scheduler.main)
    .scan(start: 0) { count, _ in count + 1 }

let evens = Subject<Int>()
evens.subscribeNext { print("  subscriber A sees even tick \($0)") }
evens.map { $0 * $0 }.subscribeNext { print("  subscriber B sees its square \($0)") }

var finished = false
ticks
    .doNext { print("tick \($0)") }
    .filter { $0 % 2 == 0 }
    .take(5)
    .subscribe(
        next: { evens.sendNext($0) },
        completed: {
            evens.sendCompleted()
            print("done: five even ticks")
            finished = true
        })

_ = EventLoop.main.run(until: { finished }, timeout: 30)
