package entitymemory

// normKey folds a key for matching: ASCII letters lowercased, '_', '-' and
// ' ' dropped, so "page_id", "pageId" and "Page ID" all read "pageid". It
// writes into buf and returns the folded bytes.
func normKey(buf []byte, key []byte) []byte {
	buf = buf[:0]
	if len(key) <= cap(buf) {
		// The common case, branch-free and without append's checks.
		buf = buf[:len(key)]
		n := 0
		for _, c := range key {
			f := keyFold[c]
			buf[n] = byte(f)
			n += int(1 - f>>8)
		}
		return buf[:n]
	}
	for _, c := range key {
		if f := keyFold[c]; f>>8 == 0 {
			buf = append(buf, byte(f))
		}
	}
	return buf
}

// keyFold maps a key byte to its folded form: ASCII letters lowercased,
// every other byte to itself, except '_', '-' and ' ', which are dropped
// (marked by bit 8).
var keyFold = func() (t [256]uint16) {
	for c := range t {
		t[c] = uint16(c)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = uint16(c + 'a' - 'A')
	}
	t['_'], t['-'], t[' '] = 0x100, 0x100, 0x100
	return t
}()
