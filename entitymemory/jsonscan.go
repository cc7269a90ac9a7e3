package entitymemory

// normKey folds a key for matching: ASCII letters lowercased, '_', '-' and
// ' ' dropped, so "page_id", "pageId" and "Page ID" all read "pageid". It
// writes into buf and returns the folded bytes.
func normKey(buf []byte, key []byte) []byte {
	buf = buf[:0]
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		} else if c == '_' || c == '-' || c == ' ' {
			continue
		}
		buf = append(buf, c)
	}
	return buf
}
