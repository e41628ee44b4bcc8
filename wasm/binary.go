package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// This file decodes the WebAssembly binary format just enough to inspect a
// module and to walk its instructions; instrument.go rewrites modules.

// moduleInfo is what the host needs to know about a module before running it.
type moduleInfo struct {
	// minPages is the initial size of the module's memory (defined or imported).
	minPages uint32
	// hasMemory is false for a module without memory.
	hasMemory bool
}

// errUnsupported marks a binary the rewriter does not understand; the host
// then falls back to wazero's WithCloseOnContextDone.
var errUnsupported = errors.New("unsupported instruction or encoding")

// Section ids.
const (
	secCustom   = 0
	secImport   = 2
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secCode     = 10
	secTag      = 13
	secDataCnt  = 12
	secElement  = 9
	secData     = 11
	secFunction = 3
	secTable    = 4
	secType     = 1
)

// sectionRank is the order sections must appear in; custom sections may be anywhere.
var sectionRank = map[byte]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCnt: 11, secCode: 12, secData: 13,
}

type section struct {
	id      byte
	payload []byte
}

// reader decodes the primitive encodings of the binary format.
type reader struct {
	b   []byte
	p   int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	r.p = len(r.b)
}

func (r *reader) done() bool { return r.err != nil || r.p >= len(r.b) }

func (r *reader) byte() byte {
	if r.p >= len(r.b) {
		r.fail("unexpected end at byte %d", r.p)
		return 0
	}
	c := r.b[r.p]
	r.p++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.p+n > len(r.b) {
		r.fail("unexpected end at byte %d", r.p)
		return nil
	}
	s := r.b[r.p : r.p+n]
	r.p += n
	return s
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail("integer too long at byte %d", r.p)
	return 0
}

// skipLEB skips a signed or unsigned LEB128 of at most max bytes.
func (r *reader) skipLEB(max int) {
	for i := 0; i < max; i++ {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.fail("integer too long at byte %d", r.p)
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func readSections(bin []byte) ([]section, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly binary (no \\0asm magic)")
	}
	if binary.LittleEndian.Uint32(bin[4:8]) != 1 {
		return nil, fmt.Errorf("unsupported WebAssembly binary version %d", binary.LittleEndian.Uint32(bin[4:8]))
	}
	r := &reader{b: bin, p: 8}
	var out []section
	for !r.done() {
		id := r.byte()
		payload := r.bytes(int(r.u32()))
		out = append(out, section{id, payload})
	}
	if r.err != nil {
		return nil, fmt.Errorf("malformed section: %w", r.err)
	}
	return out, nil
}

// skipLimits skips a table or memory type's limits and returns the minimum.
func (r *reader) limits() (min uint32) {
	flags := r.byte()
	if flags&0x04 != 0 { // memory64: 64-bit limits
		r.fail("memory64 is not supported")
		return 0
	}
	min = r.u32()
	if flags&0x01 != 0 {
		r.u32()
	}
	return min
}

// inspectModule reads the memory size a module starts with.
func inspectModule(bin []byte) (moduleInfo, error) {
	secs, err := readSections(bin)
	if err != nil {
		return moduleInfo{}, err
	}
	var info moduleInfo
	for _, s := range secs {
		r := &reader{b: s.payload}
		switch s.id {
		case secImport:
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.name()
				r.name()
				switch kind := r.byte(); kind {
				case 0x00:
					r.u32()
				case 0x01:
					r.skipLEB(5) // reftype
					r.limits()
				case 0x02:
					info.minPages, info.hasMemory = r.limits(), true
				case 0x03:
					r.byte()
					r.byte()
				case 0x04:
					r.byte()
					r.u32()
				default:
					r.fail("unknown import kind %#x", kind)
				}
			}
		case secMemory:
			if r.u32() > 0 {
				info.minPages, info.hasMemory = r.limits(), true
			}
		}
		if r.err != nil {
			return moduleInfo{}, fmt.Errorf("section %d: %w", s.id, r.err)
		}
	}
	return info, nil
}

// skipMemarg skips a memory argument: alignment (with a memory index when
// bit 6 is set) and offset.
func skipMemarg(r *reader) {
	if align := r.u32(); align&0x40 != 0 {
		r.u32()
	}
	r.skipLEB(10)
}

// skipImmediates skips the immediates of one instruction.
func skipImmediates(r *reader, op byte, global uint32) error {
	switch {
	case op == 0x00, op == 0x01, op == 0x05, op == 0x0a, op == 0x0b, op == 0x0f,
		op == 0x19, op == 0x1a, op == 0x1b, op == 0xd1, op == 0xd3, op == 0xd4,
		op >= 0x45 && op <= 0xc4:
		// no immediates
	case op == 0x02, op == 0x03, op == 0x04, op == 0x06: // block, loop, if, try: block type
		r.skipLEB(5)
	case op == 0x07, op == 0x08, op == 0x09, op == 0x0c, op == 0x0d, op == 0x10, op == 0x12,
		op == 0x14, op == 0x15, op == 0x18, op == 0x20, op == 0x21, op == 0x22, op == 0x25,
		op == 0x26, op == 0x3f, op == 0x40, op == 0xd2, op == 0xd5, op == 0xd6:
		r.u32()
	case op == 0x23, op == 0x24: // global.get, global.set
		if r.u32() == global {
			return fmt.Errorf("%w: the module refers to global %d, which it does not define", errUnsupported, global)
		}
	case op == 0x0e: // br_table
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			r.u32()
		}
		r.u32()
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			r.byte()
		}
	case op == 0x1f: // try_table
		r.skipLEB(5)
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			switch kind := r.byte(); kind {
			case 0x00, 0x01:
				r.u32()
				r.u32()
			case 0x02, 0x03:
				r.u32()
			default:
				return fmt.Errorf("%w: catch kind %#x", errUnsupported, kind)
			}
		}
	case op >= 0x28 && op <= 0x3e: // loads and stores
		skipMemarg(r)
	case op == 0x41:
		r.skipLEB(5)
	case op == 0x42:
		r.skipLEB(10)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xd0: // ref.null heaptype
		r.skipLEB(5)
	case op == 0xfc:
		switch sub := r.u32(); {
		case sub <= 7:
		case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init, memory.copy, table.init, table.copy
			r.u32()
			r.u32()
		case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
			r.u32()
		default:
			return fmt.Errorf("%w: opcode 0xfc %d", errUnsupported, sub)
		}
	case op == 0xfd: // SIMD
		switch sub := r.u32(); {
		case sub <= 11, sub == 92, sub == 93:
			skipMemarg(r)
		case sub == 12, sub == 13:
			r.bytes(16)
		case sub >= 21 && sub <= 34:
			r.byte()
		case sub >= 84 && sub <= 91:
			skipMemarg(r)
			r.byte()
		}
	case op == 0xfe: // threads
		if sub := r.u32(); sub == 0x03 {
			r.byte()
		} else {
			skipMemarg(r)
		}
	default:
		return fmt.Errorf("%w: opcode %#x", errUnsupported, op)
	}
	return nil
}
