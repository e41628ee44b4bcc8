package wasm

import (
	"fmt"
	"strings"
)

// This file rewrites WebAssembly binaries to add a cheap, preemptible
// interrupt. The rewrite adds a mutable i32 counter global and an import of
// the host function nagent.tick, and puts at the head of every loop
//
//	global.get $budget
//	i32.eqz
//	if
//	  call $nagent.tick     ;; leave to Go; trap if the call must stop
//	  i32.const tickEvery
//	  global.set $budget
//	end
//	global.get $budget
//	i32.const -1
//	i32.add
//	global.set $budget
//
// so that a plugin leaves native code every tickEvery loop iterations.
// Leaving matters twice: it is where a call past its deadline is stopped,
// and it is where Go's scheduler can preempt the goroutine (native wasm
// code cannot be preempted, and a GC stop-the-world waits for every
// goroutine). Code without loops ends by itself or overflows its stack, so
// this bounds every call. wazero's WithCloseOnContextDone leaves to Go at
// every loop iteration instead, which costs 2-34x on loop-heavy code (see
// BenchmarkInterrupt); this costs a few instructions per iteration.
//
// Adding an imported function shifts the index of every defined function
// by one, so every reference to a function index is rewritten: calls,
// ref.func, exports, the start function, element segments, constant
// expressions and the name section. DWARF sections, whose code offsets the
// rewrite invalidates, are dropped.

// tickFunction is the nagent function the rewrite imports.
const tickFunction = "tick"

// tickEvery is how many loop iterations run between two ticks.
const tickEvery = 10000

// instrument returns bin rewritten as the comment at the top of this file
// says. It fails with errUnsupported on encodings it does not know, and
// when the module refers to the global index it adds (which only an
// invalid module does).
func instrument(bin []byte) ([]byte, error) {
	secs, err := readSections(bin)
	if err != nil {
		return nil, err
	}
	var types, importedFuncs, importedGlobals, definedGlobals uint32
	has := map[byte]bool{}
	for _, s := range secs {
		has[s.id] = true
		r := &reader{b: s.payload}
		switch s.id {
		case secType:
			types = r.u32()
		case secImport:
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.name()
				r.name()
				switch kind := r.byte(); kind {
				case 0x00:
					r.u32()
					importedFuncs++
				case 0x01:
					r.skipLEB(5)
					r.limits()
				case 0x02:
					r.limits()
				case 0x03:
					r.byte()
					r.byte()
					importedGlobals++
				case 0x04:
					r.byte()
					r.u32()
				default:
					r.fail("unknown import kind %#x", kind)
				}
			}
		case secGlobal:
			definedGlobals = r.u32()
		}
		if r.err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", errUnsupported, s.id, r.err)
		}
	}
	rw := &rewriter{tick: importedFuncs, budget: importedGlobals + definedGlobals}
	check := appendU32([]byte{0x23}, rw.budget)   // global.get $budget
	check = append(check, 0x45, 0x04, 0x40, 0x10) // i32.eqz, if, call
	check = appendU32(check, rw.tick)             // $tick
	check = append(check, 0x41)                   // i32.const
	check = appendS32(check, tickEvery)
	check = appendU32(append(check, 0x24), rw.budget)                   // global.set $budget
	check = appendU32(append(check, 0x0b, 0x23), rw.budget)             // end, global.get $budget
	check = appendU32(append(check, 0x41, 0x7f, 0x6a, 0x24), rw.budget) // i32.const -1, i32.add, global.set
	rw.check = check

	tickType := []byte{0x60, 0x00, 0x00} // () -> ()
	tickImport := appendU32(nil, uint32(len(hostModuleName)))
	tickImport = append(tickImport, hostModuleName...)
	tickImport = appendU32(tickImport, uint32(len(tickFunction)))
	tickImport = append(tickImport, tickFunction...)
	tickImport = appendU32(append(tickImport, 0x00), types)
	budget := []byte{0x7f, 0x01, 0x41} // mut i32 = i32.const tickEvery
	budget = append(appendS32(budget, tickEvery), 0x0b)

	var out []section
	for _, s := range secs {
		var payload []byte
		var err error
		switch s.id {
		case secCustom:
			r := &reader{b: s.payload}
			switch name := r.name(); {
			case strings.HasPrefix(name, ".debug_"):
				continue
			case name == "name":
				payload, err = rw.names(s.payload)
			default:
				payload = s.payload
			}
		case secType:
			payload = appendVec(s.payload, tickType)
		case secImport:
			payload = appendVec(s.payload, tickImport)
		case secGlobal:
			payload, err = rw.globals(s.payload)
			if err == nil {
				payload = appendVec(payload, budget)
			}
		case secExport:
			payload, err = rw.exports(s.payload)
		case secStart:
			r := &reader{b: s.payload}
			payload = appendU32(nil, rw.fn(r.u32()))
			err = r.err
		case secElement:
			payload, err = rw.elements(s.payload)
		case secCode:
			payload, err = rw.code(s.payload)
		default:
			payload = s.payload
		}
		if err != nil {
			return nil, err
		}
		out = append(out, section{s.id, payload})
	}
	insert := func(id byte, payload []byte) {
		for i, s := range out {
			if s.id != secCustom && sectionRank[s.id] > sectionRank[id] {
				out = append(out[:i], append([]section{{id, payload}}, out[i:]...)...)
				return
			}
		}
		out = append(out, section{id, payload})
	}
	if !has[secType] {
		insert(secType, append([]byte{1}, tickType...))
	}
	if !has[secImport] {
		insert(secImport, append([]byte{1}, tickImport...))
	}
	if !has[secGlobal] {
		insert(secGlobal, append([]byte{1}, budget...))
	}

	res := append([]byte(nil), bin[:8]...)
	for _, s := range out {
		res = append(res, s.id)
		res = appendU32(res, uint32(len(s.payload)))
		res = append(res, s.payload...)
	}
	return res, nil
}

// appendS32 appends a signed LEB128.
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendVec adds one entry to a vector section: count+1, the old entries, entry.
func appendVec(payload, entry []byte) []byte {
	r := &reader{b: payload}
	n := r.u32()
	out := appendU32(make([]byte, 0, len(payload)+len(entry)+1), n+1)
	out = append(out, payload[r.p:]...)
	return append(out, entry...)
}

// rewriter shifts function indices past the new import and adds the check.
type rewriter struct {
	tick   uint32 // the index of the imported tick; defined functions start after it
	budget uint32 // the index of the counter global
	check  []byte
}

// fn maps an old function index to the new one.
func (rw *rewriter) fn(i uint32) uint32 {
	if i >= rw.tick {
		return i + 1
	}
	return i
}

// expr copies a constant expression up to and including its end, shifting
// ref.func.
func (rw *rewriter) expr(out []byte, r *reader) ([]byte, error) {
	for {
		start := r.p
		op := r.byte()
		if r.err != nil {
			return nil, fmt.Errorf("%w: %v", errUnsupported, r.err)
		}
		if op == 0xd2 {
			out = appendU32(append(out, op), rw.fn(r.u32()))
			continue
		}
		if err := skipImmediates(r, op, rw.budget); err != nil {
			return nil, err
		}
		out = append(out, r.b[start:r.p]...)
		if op == 0x0b {
			return out, nil
		}
	}
}

func (rw *rewriter) globals(payload []byte) ([]byte, error) {
	r := &reader{b: payload}
	n := r.u32()
	out := appendU32(nil, n)
	for ; n > 0 && r.err == nil; n-- {
		out = append(out, r.byte(), r.byte()) // valtype, mutability
		var err error
		if out, err = rw.expr(out, r); err != nil {
			return nil, err
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: global section: %v", errUnsupported, r.err)
	}
	return out, nil
}

func (rw *rewriter) exports(payload []byte) ([]byte, error) {
	r := &reader{b: payload}
	n := r.u32()
	out := appendU32(nil, n)
	for ; n > 0 && r.err == nil; n-- {
		name := r.name()
		kind := r.byte()
		idx := r.u32()
		if kind == 0x00 {
			idx = rw.fn(idx)
		}
		out = appendU32(out, uint32(len(name)))
		out = appendU32(append(append(out, name...), kind), idx)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: export section: %v", errUnsupported, r.err)
	}
	return out, nil
}

func (rw *rewriter) funcVec(out []byte, r *reader) []byte {
	n := r.u32()
	out = appendU32(out, n)
	for ; n > 0 && r.err == nil; n-- {
		out = appendU32(out, rw.fn(r.u32()))
	}
	return out
}

func (rw *rewriter) exprVec(out []byte, r *reader) ([]byte, error) {
	n := r.u32()
	out = appendU32(out, n)
	var err error
	for ; n > 0 && r.err == nil && err == nil; n-- {
		out, err = rw.expr(out, r)
	}
	return out, err
}

// elements rewrites the element section, in all eight segment encodings.
func (rw *rewriter) elements(payload []byte) ([]byte, error) {
	r := &reader{b: payload}
	n := r.u32()
	out := appendU32(nil, n)
	var err error
	for ; n > 0 && r.err == nil && err == nil; n-- {
		flags := r.u32()
		out = appendU32(out, flags)
		switch flags {
		case 0:
			if out, err = rw.expr(out, r); err == nil {
				out = rw.funcVec(out, r)
			}
		case 1, 3:
			out = rw.funcVec(append(out, r.byte()), r)
		case 2:
			out = appendU32(out, r.u32())
			if out, err = rw.expr(out, r); err == nil {
				out = rw.funcVec(append(out, r.byte()), r)
			}
		case 4:
			if out, err = rw.expr(out, r); err == nil {
				out, err = rw.exprVec(out, r)
			}
		case 5, 7:
			out, err = rw.exprVec(append(out, r.byte()), r)
		case 6:
			out = appendU32(out, r.u32())
			if out, err = rw.expr(out, r); err == nil {
				out, err = rw.exprVec(append(out, r.byte()), r)
			}
		default:
			return nil, fmt.Errorf("%w: element segment flags %d", errUnsupported, flags)
		}
	}
	if err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: element section: %v", errUnsupported, r.err)
	}
	return out, nil
}

// names shifts the function indices of the name section's function names
// (1), local names (2) and label names (3).
func (rw *rewriter) names(payload []byte) ([]byte, error) {
	r := &reader{b: payload}
	r.name()
	out := append([]byte(nil), payload[:r.p]...)
	for !r.done() {
		id := r.byte()
		sub := r.bytes(int(r.u32()))
		if r.err != nil {
			break
		}
		sr := &reader{b: sub}
		var body []byte
		switch id {
		case 1:
			n := sr.u32()
			body = appendU32(nil, n)
			for ; n > 0 && sr.err == nil; n-- {
				body = appendU32(body, rw.fn(sr.u32()))
				name := sr.name()
				body = append(appendU32(body, uint32(len(name))), name...)
			}
		case 2, 3:
			n := sr.u32()
			body = appendU32(nil, n)
			for ; n > 0 && sr.err == nil; n-- {
				body = appendU32(body, rw.fn(sr.u32()))
				start := sr.p
				for m := sr.u32(); m > 0 && sr.err == nil; m-- {
					sr.u32()
					sr.name()
				}
				body = append(body, sub[start:sr.p]...)
			}
		default:
			body = sub
		}
		if sr.err != nil {
			return nil, fmt.Errorf("%w: name section: %v", errUnsupported, sr.err)
		}
		out = append(appendU32(append(out, id), uint32(len(body))), body...)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: name section: %v", errUnsupported, r.err)
	}
	return out, nil
}

// code rewrites the code section.
func (rw *rewriter) code(payload []byte) ([]byte, error) {
	r := &reader{b: payload}
	n := r.u32()
	out := appendU32(make([]byte, 0, len(payload)+len(payload)/4), n)
	var body []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := int(r.u32())
		start := r.p
		r.bytes(size)
		if r.err != nil {
			break
		}
		var err error
		body, err = rw.body(body[:0], payload[start:start+size])
		if err != nil {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: code section: %v", errUnsupported, r.err)
	}
	return out, nil
}

// body copies one function body, shifting function indices and adding the
// check after every loop's block type.
func (rw *rewriter) body(out, body []byte) ([]byte, error) {
	r := &reader{b: body}
	for groups := r.u32(); groups > 0 && r.err == nil; groups-- {
		r.u32()
		if t := r.byte(); t < 0x6f || t > 0x7f { // a reference type with a heap type immediate
			return nil, fmt.Errorf("%w: local of type %#x", errUnsupported, t)
		}
	}
	last := 0
	for !r.done() {
		op := r.byte()
		switch op {
		case 0x10, 0x12, 0xd2: // call, return_call, ref.func
			out = append(out, body[last:r.p]...)
			out = appendU32(out, rw.fn(r.u32()))
			last = r.p
			continue
		}
		if err := skipImmediates(r, op, rw.budget); err != nil {
			return nil, err
		}
		if op == 0x03 { // loop bt
			out = append(out, body[last:r.p]...)
			out = append(out, rw.check...)
			last = r.p
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", errUnsupported, r.err)
	}
	return append(out, body[last:]...), nil
}
