package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // registers GIF for image.Decode
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/transform"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// ReadTool is the read tool: it returns a text file's lines, or an image as
// an image block. Text is cut at ReadMaxLines lines or ReadMaxBytes bytes,
// whichever comes first, with a closing notice that says which offset to
// read on from. The file is streamed, so reading the head of a huge file
// costs what reading the head of a small one does.
type ReadTool struct{ ws *Workspace }

// NewRead returns the read tool over ws.
func NewRead(ws *Workspace) *ReadTool { return &ReadTool{ws: ws} }

// Name returns "read".
func (*ReadTool) Name() string { return "read" }

// Description tells the model how to use read.
func (*ReadTool) Description() string {
	return fmt.Sprintf("Read a file in the workspace. Text comes back as its lines, at most %d lines or %d KB per call; "+
		"a notice at the end says which offset to continue from. Use offset (1-based line) and limit to read a part of a large file. "+
		"Lines longer than %d characters are cut. PNG, JPEG, GIF and WebP files come back as images; other binary files are refused.",
		ReadMaxLines, ReadMaxBytes/1024, ReadMaxLineChars)
}

var readSchema = schemaOf[readArgs](atLeast(1, "limit"))

// Schema returns the arguments schema: path, offset, limit.
func (*ReadTool) Schema() json.RawMessage { return readSchema() }

// ConcurrencySafe reports true: reads run beside other calls.
func (*ReadTool) ConcurrencySafe(tool.Call) bool { return true }

// ReadOnly reports true.
func (*ReadTool) ReadOnly() bool { return true }

type readArgs struct {
	Path   string `json:"path" jsonschema:"Path of the file, relative to the workspace root or absolute"`
	Offset int    `json:"offset,omitempty" jsonschema:"Line to start at, 1-based (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"Most lines to return"`
}

// ReadDetails is the Details of a read result.
type ReadDetails struct {
	Path string `json:"path"`
	// FirstLine and LastLine are the lines shown (1-based), 0 for an image.
	FirstLine int `json:"firstLine,omitempty"`
	LastLine  int `json:"lastLine,omitempty"`
	// TotalLines is the file's line count when it was counted.
	TotalLines int `json:"totalLines,omitempty"`
	// TruncatedBy is "lines", "bytes" or "limit" when more of the file
	// follows, else empty.
	TruncatedBy string `json:"truncatedBy,omitempty"`
	// CutLines counts lines cut at ReadMaxLineChars.
	CutLines int    `json:"cutLines,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// readCountBudget bounds how many more bytes read scans after the lines it
// shows to count the file's lines; past it the total is left out, so the
// cost of a read does not grow with the file.
const readCountBudget = 1 << 20

// readSniffBytes is how much of a file is examined for image magic and NUL
// bytes.
const readSniffBytes = 8192

// Execute reads the file.
func (t *ReadTool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	var a readArgs
	if err := tool.DecodeArgs(call, &a); err != nil {
		return tool.Result{}, err
	}
	real, err := t.ws.ResolveRead(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	tr, name, err := t.ws.readTree(real)
	if err != nil {
		return tool.Result{}, err
	}
	defer tr.close()
	if st, err := fs.Stat(tr.fsys, name); err != nil {
		return tool.Result{}, pathError(a.Path, err)
	} else if err := checkRegular(a.Path, st); err != nil {
		return tool.Result{}, err
	}
	f, err := tr.fsys.Open(name)
	if err != nil {
		return tool.Result{}, pathError(a.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tool.Result{}, pathError(a.Path, err)
	}
	if fi.IsDir() {
		return tool.Result{}, fmt.Errorf("%s is a directory; use ls to list it", a.Path)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(readSniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return tool.Result{}, pathError(a.Path, err)
	}
	if mime := imageType(head); mime != "" {
		return readImage(a.Path, br, fi.Size(), mime)
	}
	// A byte-order mark says the file is text: UTF-8 with a BOM is read
	// without it (edit keeps it), UTF-16 is decoded.
	if bytes.HasPrefix(head, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
		return readText(ctx, a, br)
	}
	if dec, _ := utf16WithBOM(head); dec != nil {
		return readText(ctx, a, bufio.NewReaderSize(transform.NewReader(br, dec), 64<<10))
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return tool.Result{}, fmt.Errorf("%s is a binary file (%s); read returns text, and PNG, JPEG, GIF or WebP images",
			a.Path, strings.SplitN(http.DetectContentType(head), ";", 2)[0])
	}
	return readText(ctx, a, br)
}

func readImage(p string, r io.Reader, size int64, mime string) (tool.Result, error) {
	if size > readMaxImageInput {
		return tool.Result{}, fmt.Errorf("%s is a %s image of %d bytes, too large to send or scale down (over %d MB); shrink it first (for example with bash)",
			p, mime, size, readMaxImageInput>>20)
	}
	data, err := io.ReadAll(io.LimitReader(r, readMaxImageInput+1))
	if err != nil {
		return tool.Result{}, pathError(p, err)
	}
	out, outMime, note, err := fitImage(data, mime)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %v", p, err)
	}
	if len(out) > ReadMaxImageBytes {
		return tool.Result{}, fmt.Errorf("%s is a %s image of %d bytes, over the %d MB a model accepts, and could not be scaled down; shrink it first (for example with bash)",
			p, mime, len(data), ReadMaxImageBytes>>20)
	}
	return tool.Result{
		Content: []llm.Content{
			llm.Text(fmt.Sprintf("Image %s (%s%s)", p, outMime, note)),
			llm.Image(base64.StdEncoding.EncodeToString(out), outMime),
		},
		Details: detailsJSON(ReadDetails{Path: p, MimeType: outMime}),
	}, nil
}

// ReadMaxImageSide is the longest side, in pixels, of an image read sends;
// larger PNG, JPEG and GIF images are scaled down to fit.
const ReadMaxImageSide = 2000

// readMaxImageInput is the largest image file read will load, and
// readMaxImagePixels the largest it will decode to scale it down.
const (
	readMaxImageInput  = 64 << 20
	readMaxImagePixels = 100_000_000
)

// fitImage returns the image to send: data itself when it is small enough
// in bytes and pixels, else a scaled-down re-encoding. WebP, which the
// standard library cannot decode, is sent as it is. note describes the
// image for the model.
func fitImage(data []byte, mime string) (out []byte, outMime, note string, err error) {
	if mime == "image/webp" {
		return data, mime, fmt.Sprintf(", %d bytes", len(data)), nil
	}
	cfg, _, cerr := image.DecodeConfig(bytes.NewReader(data))
	if cerr != nil {
		// Sent as it is: the provider may know better than our decoders.
		return data, mime, fmt.Sprintf(", %d bytes", len(data)), nil
	}
	w, h := cfg.Width, cfg.Height
	if w <= ReadMaxImageSide && h <= ReadMaxImageSide && len(data) <= ReadMaxImageBytes {
		return data, mime, fmt.Sprintf(", %dx%d, %d bytes", w, h, len(data)), nil
	}
	if w*h > readMaxImagePixels {
		return nil, "", "", fmt.Errorf("the image is %dx%d, too large to scale down here; shrink it first (for example with bash)", w, h)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", "", fmt.Errorf("the image cannot be decoded to scale it down: %v", err)
	}
	scale := min(1, float64(ReadMaxImageSide)/float64(w), float64(ReadMaxImageSide)/float64(h))
	nw, nh := max(1, int(float64(w)*scale)), max(1, int(float64(h)*scale))
	small := scaleImage(img, nw, nh)
	var buf bytes.Buffer
	outMime = mime
	if mime == "image/jpeg" {
		err = jpeg.Encode(&buf, small, &jpeg.Options{Quality: 85})
	} else {
		outMime = "image/png"
		err = png.Encode(&buf, small)
		if err == nil && buf.Len() > ReadMaxImageBytes {
			buf.Reset()
			outMime = "image/jpeg"
			err = jpeg.Encode(&buf, small, &jpeg.Options{Quality: 85})
		}
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("re-encode the scaled image: %v", err)
	}
	return buf.Bytes(), outMime, fmt.Sprintf(", %dx%d scaled down from %dx%d, %d bytes", nw, nh, w, h, buf.Len()), nil
}

// scaleImage scales src to w x h by averaging the source pixels that fall
// in each destination pixel (a box filter), in premultiplied RGBA.
func scaleImage(src image.Image, w, h int) *image.RGBA {
	b := src.Bounds()
	rgba, ok := src.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(rgba, rgba.Bounds(), src, b.Min, draw.Src)
	}
	sw, sh := rgba.Bounds().Dx(), rgba.Bounds().Dy()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			var sum [4]uint64
			for sy := y0; sy < y1; sy++ {
				row := rgba.Pix[sy*rgba.Stride:]
				for sx := x0; sx < x1; sx++ {
					p := row[sx*4 : sx*4+4]
					sum[0] += uint64(p[0])
					sum[1] += uint64(p[1])
					sum[2] += uint64(p[2])
					sum[3] += uint64(p[3])
				}
			}
			n := uint64((y1 - y0) * (x1 - x0))
			d := dst.Pix[y*dst.Stride+x*4:]
			for i := range 4 {
				d[i] = uint8(sum[i] / n)
			}
		}
	}
	return dst
}

// imageType returns the MIME type of the image formats models accept,
// from magic bytes, or "".
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func readText(ctx context.Context, a readArgs, br *bufio.Reader) (tool.Result, error) {
	lr := fileLineReader{r: br}
	start := max(a.Offset, 1)
	// Skip to the first line wanted, keeping nothing.
	line := 0
	for line < start-1 {
		if line%4096 == 0 && ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		if _, _, ok, err := lr.next(0); err != nil {
			return tool.Result{}, pathError(a.Path, err)
		} else if !ok {
			break
		}
		line++
	}

	var out strings.Builder
	d := ReadDetails{Path: a.Path}
	shown, used := 0, 0
	for {
		if a.Limit > 0 && shown == a.Limit {
			d.TruncatedBy = "limit"
			break
		}
		if shown == ReadMaxLines {
			d.TruncatedBy = "lines"
			break
		}
		if d.TruncatedBy == "" && shown%4096 == 0 && ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		text, full, ok, err := lr.next(4 * ReadMaxLineChars)
		if err != nil {
			return tool.Result{}, pathError(a.Path, err)
		}
		if !ok {
			break
		}
		// Most lines are short valid UTF-8 and are copied as they are.
		plain := full == len(text) && len(text) <= ReadMaxLineChars && utf8.Valid(text)
		var s string
		cut := false
		if !plain {
			s, cut = cutLine(text, full, ReadMaxLineChars)
			if cut {
				s += fmt.Sprintf(" [… line cut at %d characters]", ReadMaxLineChars)
			}
		}
		size := len(s)
		if plain {
			size = len(text)
		}
		if used+size+1 > ReadMaxBytes {
			d.TruncatedBy = "bytes"
			lr.unread(text, full)
			break
		}
		if cut {
			d.CutLines++
		}
		if shown > 0 {
			out.WriteByte('\n')
		}
		if plain {
			out.Write(text)
		} else {
			out.WriteString(s)
		}
		used += size + 1
		shown++
	}
	if shown == 0 && d.TruncatedBy == "" {
		if start == 1 {
			return tool.Result{Content: []llm.Content{llm.Text(fmt.Sprintf("[%s is empty]", a.Path))},
				Details: detailsJSON(d)}, nil
		}
		return tool.Result{}, fmt.Errorf("offset %d is past the end of %s, which has %d lines", a.Offset, a.Path, line)
	}
	d.FirstLine, d.LastLine = start, start+shown-1
	more := false
	if d.TruncatedBy != "" {
		rest, exact, err := lr.countRest(readCountBudget)
		if err != nil {
			return tool.Result{}, pathError(a.Path, err)
		}
		more = rest > 0 || !exact
		if exact {
			d.TotalLines = d.LastLine + rest
		}
		if !more {
			d.TruncatedBy = ""
		}
	} else {
		d.TotalLines = d.LastLine
	}
	if more {
		out.WriteString("\n\n")
		next := d.LastLine + 1
		switch {
		case d.TruncatedBy == "limit" && d.TotalLines > 0:
			n := d.TotalLines - d.LastLine
			fmt.Fprintf(&out, "[%d more %s in the file. Continue with offset=%d.]", n, plural(n, "line", "lines"), next)
		case d.TruncatedBy == "limit":
			fmt.Fprintf(&out, "[The file goes on. Continue with offset=%d.]", next)
		default:
			why := fmt.Sprintf("%d-line limit", ReadMaxLines)
			if d.TruncatedBy == "bytes" {
				why = fmt.Sprintf("%d KB limit", ReadMaxBytes/1024)
			}
			if d.TotalLines > 0 {
				fmt.Fprintf(&out, "[Showing lines %d-%d of %d (%s). Continue with offset=%d.]", d.FirstLine, d.LastLine, d.TotalLines, why, next)
			} else {
				fmt.Fprintf(&out, "[Showing lines %d-%d (%s); the file goes on. Continue with offset=%d.]", d.FirstLine, d.LastLine, why, next)
			}
		}
	}
	return tool.Result{Content: []llm.Content{llm.Text(out.String())}, Details: detailsJSON(d)}, nil
}

// cutLine returns line as valid UTF-8 text, cut to maxChars characters.
// full is the line's length in the file; line may hold only its start.
func cutLine(line []byte, full, maxChars int) (string, bool) {
	n, i := 0, 0
	for i < len(line) && n < maxChars {
		_, size := utf8.DecodeRune(line[i:])
		i += size
		n++
	}
	cut := i < len(line) || full > len(line)
	s := line[:i]
	if utf8.Valid(s) {
		return string(s), cut
	}
	return strings.ToValidUTF8(string(s), "\uFFFD"), cut
}

// fileLineReader yields the lines of a stream without holding more than a
// bounded prefix of any one line, so a file that is one 50 MB line costs no
// more memory than a short one.
type fileLineReader struct {
	r   *bufio.Reader
	buf []byte
	// pending is a line handed back by unread.
	pending     []byte
	pendingFull int
	hasPending  bool
}

// next returns the next line without its "\n" or "\r\n", at most keep bytes
// of it, and the line's full length. ok is false at the end of the stream.
func (lr *fileLineReader) next(keep int) (line []byte, full int, ok bool, err error) {
	if lr.hasPending {
		lr.hasPending = false
		return lr.pending, lr.pendingFull, true, nil
	}
	lr.buf = lr.buf[:0]
	started := false
	var prev byte // the byte before the current chunk
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(chunk) > 0 {
			started = true
		}
		full += len(chunk)
		if room := keep - len(lr.buf); room > 0 {
			lr.buf = append(lr.buf, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == nil:
			// The line ends in "\n", perhaps "\r\n".
			term := 1
			if len(chunk) >= 2 && chunk[len(chunk)-2] == '\r' || len(chunk) == 1 && prev == '\r' {
				term = 2
			}
			full -= term
			return lr.buf[:min(len(lr.buf), full)], full, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			prev = chunk[len(chunk)-1]
			continue
		case errors.Is(err, io.EOF):
			if !started {
				return nil, 0, false, nil
			}
			return lr.buf, full, true, nil
		default:
			return nil, 0, false, err
		}
	}
}

// unread hands line back to the next call of next.
func (lr *fileLineReader) unread(line []byte, full int) {
	lr.pending = append(lr.pending[:0], line...)
	lr.pendingFull = full
	lr.hasPending = true
}

// countRest counts the lines left, reading at most about budget bytes.
// exact is false when the budget ran out first.
func (lr *fileLineReader) countRest(budget int) (n int, exact bool, err error) {
	if lr.hasPending {
		lr.hasPending = false
		n++
	}
	read := 0
	last := byte('\n')
	buf := make([]byte, 32<<10)
	for read < budget {
		k, err := lr.r.Read(buf)
		if k > 0 {
			chunk := buf[:k]
			n += bytes.Count(chunk, []byte{'\n'})
			last = chunk[k-1]
			read += k
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				n++ // a last line without a newline
			}
			return n, true, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
	if _, err := lr.r.Peek(1); errors.Is(err, io.EOF) {
		if last != '\n' {
			n++
		}
		return n, true, nil
	}
	return n, false, nil
}
