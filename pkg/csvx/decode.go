package csvx

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Encoding names the import answer reports.
const (
	EncUTF8        = "UTF-8"
	EncUTF8BOM     = "UTF-8 with BOM"
	EncUTF16LE     = "UTF-16LE"
	EncUTF16BE     = "UTF-16BE"
	EncWindows1252 = "Windows-1252"
)

var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// decoded is the text of an upload as UTF-8, with how it was decoded.
type decoded struct {
	r *bufio.Reader
	// head is the first sniffSize bytes of the decoded text.
	head []byte
	// enc reports the encoding; for a file whose first window is plain
	// ASCII it is only known once the first other byte was read.
	enc func() string
}

// decode detects the encoding of src and returns its text as UTF-8 (see
// Detect). err is errTooLarge, a read error, or an invalid-input fault for a file
// that is not text in any supported encoding.
func decode(src io.Reader) (decoded, error) {
	br := bufio.NewReaderSize(src, sniffSize)
	head, err := peek(br)
	if err != nil && len(head) == 0 {
		return decoded{}, err
	}
	switch {
	case bytes.HasPrefix(head, bomUTF8):
		_, _ = br.Discard(len(bomUTF8))
		return rebuffer(br, EncUTF8BOM)
	case bytes.HasPrefix(head, bomUTF16LE), bytes.HasPrefix(head, bomUTF16BE):
		name, order := EncUTF16LE, unicode.LittleEndian
		if head[0] == 0xFE {
			name, order = EncUTF16BE, unicode.BigEndian
		}
		// ExpectBOM consumes the mark; invalid sequences become U+FFFD.
		tr := transform.NewReader(br, unicode.UTF16(order, unicode.ExpectBOM).NewDecoder())
		d, err := rebuffer(tr, name)
		if err != nil {
			return d, err
		}
		if !isText(d.head) {
			return decoded{}, Invalid("the file is not a CSV text file")
		}
		return d, nil
	}
	if !isText(head) {
		return decoded{}, Invalid("the file is not a CSV text file")
	}
	if !utf8.Valid(trimCutRune(head)) {
		if !plausible1252(head) {
			return decoded{}, Invalid("the file is neither UTF-8 nor Windows-1252 text")
		}
		return rebuffer(transform.NewReader(br, charmap.Windows1252.NewDecoder()), EncWindows1252)
	}
	if !isASCII(head) {
		return decoded{r: br, head: head, enc: func() string { return EncUTF8 }}, nil
	}
	// Plain ASCII so far: the first other byte decides (see lazyDecoder).
	lz := &lazyDecoder{}
	d, err := rebuffer(transform.NewReader(br, lz), "")
	d.enc = lz.name
	return d, err
}

// peek reads up to sniffSize bytes without consuming them; a short file
// is no error.
func peek(br *bufio.Reader) ([]byte, error) {
	head, err := br.Peek(sniffSize)
	switch {
	case err == nil, err == io.EOF, err == bufio.ErrBufferFull:
		return head, nil
	}
	return head, err
}

func rebuffer(r io.Reader, name string) (decoded, error) {
	br := bufio.NewReaderSize(r, sniffSize)
	head, err := peek(br)
	if err != nil && len(head) == 0 {
		return decoded{}, err
	}
	return decoded{r: br, head: head, enc: func() string { return name }}, nil
}

// isText refuses binary uploads (spreadsheets in xlsx, images, PDFs, a
// UTF-16 file without its byte order mark): a NUL byte or a sniffed type
// other than text.
func isText(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	return strings.HasPrefix(http.DetectContentType(head), "text/")
}

// trimCutRune drops a multi-byte rune cut at the end of a window.
func trimCutRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return b
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// plausible1252 reports whether b reads as Windows-1252 text: no byte the
// code page leaves undefined.
func plausible1252(b []byte) bool {
	for _, c := range b {
		switch c {
		case 0x81, 0x8D, 0x8F, 0x90, 0x9D:
			return false
		}
	}
	return true
}

// lazyDecoder passes ASCII through and decides at the first other byte:
// if the bytes from there (as far as they were read) are valid UTF-8 the
// file is UTF-8 and passes through, otherwise it is Windows-1252 and is
// decoded from there on. A file that stays ASCII is UTF-8.
type lazyDecoder struct {
	dec transform.Transformer // nil while undecided or for UTF-8
	enc string
}

func (d *lazyDecoder) name() string {
	if d.enc == "" {
		return EncUTF8
	}
	return d.enc
}

// Reset implements transform.Transformer.
func (d *lazyDecoder) Reset() {}

// Transform implements transform.Transformer.
func (d *lazyDecoder) Transform(dst, src []byte, atEOF bool) (int, int, error) {
	if d.dec != nil {
		return d.dec.Transform(dst, src, atEOF)
	}
	if d.enc == EncUTF8 {
		return copyAll(dst, src)
	}
	i := 0
	for i < len(src) && src[i] < utf8.RuneSelf {
		i++
	}
	if i == len(src) {
		return copyAll(dst, src)
	}
	rest := src[i:]
	if !atEOF && !utf8.FullRune(rest) {
		n, _, err := copyAll(dst, src[:i])
		if err != nil {
			return n, n, err
		}
		return n, n, transform.ErrShortSrc
	}
	if utf8.Valid(trimCutRune(rest)) && (atEOF || utf8.FullRune(rest)) && validStart(rest) {
		d.enc = EncUTF8
		return copyAll(dst, src)
	}
	d.enc = EncWindows1252
	d.dec = charmap.Windows1252.NewDecoder()
	n, _, err := copyAll(dst, src[:i])
	if err != nil {
		return n, n, err
	}
	m, k, err := d.dec.Transform(dst[n:], rest, atEOF)
	return n + m, i + k, err
}

// validStart reports whether b starts with a complete, valid UTF-8 rune.
func validStart(b []byte) bool {
	r, size := utf8.DecodeRune(b)
	return !(r == utf8.RuneError && size <= 1)
}

func copyAll(dst, src []byte) (int, int, error) {
	n := copy(dst, src)
	if n < len(src) {
		return n, n, transform.ErrShortDst
	}
	return n, n, nil
}
