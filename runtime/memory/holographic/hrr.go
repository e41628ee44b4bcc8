package holographic

import (
	"hash/fnv"
	"math"
	"math/cmplx"
	"sync"
)

// DefaultDimensions is the length of an HRR vector.
const DefaultDimensions = 256

// Encoder turns terms into holographic reduced representations (Plate's
// HRR). Each term has a deterministic atom: a vector of independent normal
// values with variance 1/d, drawn from a generator seeded by the term's
// FNV-1a hash, so the same term has the same atom in every process and on
// every machine. A text of terms t1…tn is encoded as
//
//	v = Σ atom(ti) + Σ atom(ti) ⊛ atom(ti+1)*
//
// where ⊛ is circular convolution (HRR binding, computed as a product in
// the Fourier domain) and x* is the HRR involution, x*[j] = x[−j mod d]
// (the approximate inverse, the complex conjugate in the Fourier domain),
// which makes the bound pair ordered: convolution alone is commutative.
// The result is normalised to unit length. The sum of atoms makes texts
// that share terms similar; the bound neighbour pairs make texts that share
// word order more similar still. The cosine of two encodings estimates
// their overlap.
type Encoder struct {
	dim     int
	twiddle []complex128

	mu    sync.RWMutex
	atoms map[string][]complex128 // term → Fourier transform of its atom
}

// NewEncoder returns an encoder of dim-dimensional vectors; dim must be a
// power of two (DefaultDimensions when 0).
func NewEncoder(dim int) *Encoder {
	if dim <= 0 {
		dim = DefaultDimensions
	}
	if dim&(dim-1) != 0 {
		panic("holographic: dimensions must be a power of two")
	}
	tw := make([]complex128, dim/2)
	for i := range tw {
		tw[i] = cmplx.Exp(complex(0, -2*math.Pi*float64(i)/float64(dim)))
	}
	return &Encoder{dim: dim, twiddle: tw, atoms: make(map[string][]complex128)}
}

// Dim is the vector length.
func (e *Encoder) Dim() int { return e.dim }

// Atom returns the term's atom vector.
func (e *Encoder) Atom(term string) []float64 {
	h := fnv.New64a()
	h.Write([]byte(term))
	state := h.Sum64()
	next := func() uint64 { // splitmix64
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	uniform := func() float64 { return (float64(next()>>11) + 0.5) / (1 << 53) }
	sigma := 1 / math.Sqrt(float64(e.dim))
	v := make([]float64, e.dim)
	for i := 0; i < e.dim; i += 2 { // Box–Muller, two normals per pair
		r := math.Sqrt(-2 * math.Log(uniform()))
		theta := 2 * math.Pi * uniform()
		v[i] = r * math.Cos(theta) * sigma
		if i+1 < e.dim {
			v[i+1] = r * math.Sin(theta) * sigma
		}
	}
	return v
}

func (e *Encoder) atomFFT(term string) []complex128 {
	e.mu.RLock()
	a, ok := e.atoms[term]
	e.mu.RUnlock()
	if ok {
		return a
	}
	v := e.Atom(term)
	a = make([]complex128, e.dim)
	for i, x := range v {
		a[i] = complex(x, 0)
	}
	e.fft(a, false)
	e.mu.Lock()
	if len(e.atoms) > 100_000 { // bound the cache; atoms are cheap to redraw
		clear(e.atoms)
	}
	e.atoms[term] = a
	e.mu.Unlock()
	return a
}

// Encode returns the unit-length HRR vector of terms (in text order); nil
// for no terms.
func (e *Encoder) Encode(terms []string) []float32 {
	if len(terms) == 0 {
		return nil
	}
	acc := make([]complex128, e.dim)
	var prev []complex128
	for _, t := range terms {
		a := e.atomFFT(t)
		for i := range acc {
			acc[i] += a[i]
			if prev != nil {
				acc[i] += prev[i] * cmplx.Conj(a[i]) // prev ⊛ a*: a product in the Fourier domain
			}
		}
		prev = a
	}
	e.fft(acc, true)
	out := make([]float32, e.dim)
	var norm float64
	for _, c := range acc {
		norm += real(c) * real(c)
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return out
	}
	for i, c := range acc {
		out[i] = float32(real(c) / norm)
	}
	return out
}

// Cosine returns the cosine similarity of two encodings (their dot product,
// since encodings have unit length); 0 when the lengths differ.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// fft transforms x in place (radix-2, iterative); inverse scales by 1/n.
func (e *Encoder) fft(x []complex128, inverse bool) {
	n := len(x)
	for i, j := 1, 0; i < n; i++ { // bit reversal
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		step := n / size
		for start := 0; start < n; start += size {
			for k := 0; k < size/2; k++ {
				w := e.twiddle[k*step]
				if inverse {
					w = cmplx.Conj(w)
				}
				u, v := x[start+k], x[start+k+size/2]*w
				x[start+k], x[start+k+size/2] = u+v, u-v
			}
		}
	}
	if inverse {
		for i := range x {
			x[i] /= complex(float64(n), 0)
		}
	}
}
