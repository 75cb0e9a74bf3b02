import Testing
@testable import ReactiveUV

@Suite struct LineBufferWholeLinesTests {
    func feed(_ chunks: [String], max: Int = 100) throws -> ([String], String?) {
        var b = LineBuffer(maxLength: max)
        var out: [String] = []
        for c in chunks {
            try Array(c.utf8).withUnsafeBytes { raw in
                try b.appendWholeLines(raw) { out.append(String(decoding: $0, as: UTF8.self)) }
            }
        }
        return (out, b.finishWholeLines().map { String(decoding: $0, as: UTF8.self) })
    }

    @Test func emitsCompleteLinesAsOneChunkAndKeepsThePartialOne() throws {
        let (chunks, rest) = try feed(["a\nb", "c\nd\ne", "f"])
        #expect(chunks == ["a\n", "bc\nd\n"])
        #expect(rest == "ef\n")
    }

    @Test func bytesAreUnchanged() throws {
        #expect(try feed(["x\r\ny\n"]).0 == ["x\r\ny\n"])
    }

    @Test func lineLimitHoldsAcrossChunks() throws {
        #expect(try feed(["abcd\r\n"], max: 4).0 == ["abcd\r\n"])
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try feed(["ok\nabcde\n"], max: 4) }
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try feed(["ab", "cd", "e"], max: 4) }
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try feed(["abc", "de\n"], max: 4) }
    }
}

/// `appendWholeLines` against a byte-by-byte model of its contract, on random chunks: lines
/// of every length around the limit, `\r` before breaks and at chunk ends, chunks that hold
/// no break, and spans between a chunk's first and last break both within and over the
/// limit (the two ways the length check runs).
@Suite struct LineBufferWholeLinesModelTests {
    /// The contract, one byte at a time: a line's length leaves out one `\r` before its
    /// break; an unfinished line fails once it is longer than the limit, one byte over
    /// allowed only for a `\r`; a chunk's complete lines come out together, nothing of a
    /// chunk that fails.
    struct Model {
        let maxLength: Int
        var pending: [UInt8] = []

        mutating func append(_ chunk: [UInt8]) -> Result<[UInt8]?, LineError> {
            var line = pending
            var out: [UInt8] = []
            for byte in chunk {
                line.append(byte)
                if byte == 10 {
                    let length = line.count - 1 - (line.count >= 2 && line[line.count - 2] == 13 ? 1 : 0)
                    if length > maxLength { return .failure(.lineTooLong(maxLength: maxLength)) }
                    out += line
                    line = []
                }
            }
            if line.count > maxLength + 1 || (line.count == maxLength + 1 && line.last != 13) {
                return .failure(.lineTooLong(maxLength: maxLength))
            }
            pending = line
            return .success(out.isEmpty ? nil : out)
        }
    }

    /// A deterministic generator (SplitMix64), so a failure replays.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    @Test(arguments: 0..<200)
    func matchesTheModel(seed: Int) {
        var random = Generator(state: UInt64(seed))
        let maxLength = 1 + random.next(12)
        // Lines from empty to a few bytes over the limit, some ending in CRLF.
        var stream: [UInt8] = []
        for _ in 0..<(5 + random.next(40)) {
            let length = random.next(maxLength + 4)
            stream += (0..<length).map { _ in UInt8(ascii: "a") + UInt8(random.next(26)) }
            if random.next(4) == 0 { stream.append(13) }
            stream.append(10)
        }
        if random.next(2) == 0 { stream += [UInt8](repeating: 0x78, count: random.next(maxLength + 3)) }
        if random.next(4) == 0 { stream.append(13) }

        var buffer = LineBuffer(maxLength: maxLength)
        // The same stream the way File.tailChunks feeds it: the partial line taken out and
        // put in front of the next chunk, the whole split at the chunk's last line break
        // (as FileRequest's pool thread does), then accepted.
        var split = LineBuffer(maxLength: maxLength)
        var model = Model(maxLength: maxLength)
        var index = 0
        while index < stream.count {
            // Chunks from 1 byte to several times the limit.
            let size = min(stream.count - index, 1 + random.next(4 * maxLength + 8))
            let chunk = Array(stream[index..<index + size])
            index += size
            var emitted: [[UInt8]] = []
            let got: Result<[UInt8]?, LineError>
            do {
                try chunk.withUnsafeBytes { raw in try buffer.appendWholeLines(raw) { emitted.append($0) } }
                #expect(emitted.count <= 1, "one chunk out per chunk in")
                got = .success(emitted.first)
            } catch let error as LineError {
                #expect(emitted.isEmpty, "nothing of a failing chunk is sent")
                got = .failure(error)
            } catch {
                Issue.record("unexpected error \(error)")
                return
            }
            let expected = model.append(chunk)
            #expect(got == expected, "seed \(seed), max \(maxLength), chunk at \(index - size)")

            let carried = split.takePartialLine()
            let bytes = carried + chunk
            let splitGot: Result<[UInt8]?, LineError>
            do {
                if let lastBreak = chunk.lastIndex(of: 10) {
                    let end = carried.count + lastBreak + 1
                    splitGot = .success(try split.acceptWholeLines(Array(bytes[..<end]), partial: Array(bytes[end...])))
                } else {
                    splitGot = .success(try split.acceptWholeLines([], partial: bytes))
                }
            } catch let error as LineError {
                splitGot = .failure(error)
            } catch {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(splitGot == expected, "split: seed \(seed), max \(maxLength), chunk at \(index - size)")
            if case .failure = expected { return }
        }
        let rest = buffer.finishWholeLines()
        #expect(rest == (model.pending.isEmpty ? nil : model.pending + [10]))
        #expect(split.finishWholeLines() == rest)
    }
}
