package desktop

import (
	"bufio"
	"encoding/binary"
	"image/color"
	"strings"
	"testing"
)

// xwd builds a dump as xwd -root writes it for a 24-bit TrueColor screen.
func xwd(w, h int, lsb bool, pix func(x, y int) (r, g, b uint8)) []byte {
	name := "xwdump\x00\x00"
	hdr := make([]uint32, 25)
	hdr[0] = uint32(100 + len(name))
	hdr[1], hdr[2], hdr[3], hdr[4], hdr[5] = 7, 2, 24, uint32(w), uint32(h)
	if !lsb {
		hdr[7] = 1
	}
	hdr[11], hdr[12], hdr[13] = 32, uint32(w*4), 4
	hdr[14], hdr[15], hdr[16] = 0xff0000, 0x00ff00, 0x0000ff
	hdr[19] = 2 // two colour map entries to skip
	var b []byte
	for _, v := range hdr {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, name...)
	b = append(b, make([]byte, 2*12)...)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bl := pix(x, y)
			if lsb {
				b = append(b, bl, g, r, 0)
			} else {
				b = append(b, 0, r, g, bl)
			}
		}
	}
	return b
}

func TestDecodeXWD(t *testing.T) {
	pix := func(x, y int) (uint8, uint8, uint8) { return uint8(x * 10), uint8(y * 20), 200 }
	for _, lsb := range []bool{true, false} {
		img, err := decodeXWD(xwd(7, 5, lsb, pix))
		if err != nil {
			t.Fatal(err)
		}
		if img.Bounds().Dx() != 7 || img.Bounds().Dy() != 5 {
			t.Fatalf("bounds %v", img.Bounds())
		}
		for y := 0; y < 5; y++ {
			for x := 0; x < 7; x++ {
				r, g, b := pix(x, y)
				if got := img.RGBAAt(x, y); got != (color.RGBA{r, g, b, 255}) {
					t.Fatalf("lsb %v: pixel (%d, %d) = %v, want %v", lsb, x, y, got, color.RGBA{r, g, b, 255})
				}
			}
		}
	}
}

// TestDecodeXWDRefuses: a dump the container made is not trusted; short or odd ones fail.
func TestDecodeXWDRefuses(t *testing.T) {
	good := xwd(4, 4, true, func(x, y int) (uint8, uint8, uint8) { return 1, 2, 3 })
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-5],
		"version":   append(binary.BigEndian.AppendUint32(append([]byte{}, good[:4]...), 6), good[8:]...),
		"huge":      append(append(append([]byte{}, good[:16]...), binary.BigEndian.AppendUint32(nil, 1<<30)...), good[20:]...),
	} {
		if _, err := decodeXWD(b); err == nil || !strings.HasPrefix(err.Error(), "xwd: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("short\n\n"+strings.Repeat("x", 100)+"\nlast"), 16)
	for _, want := range []string{"short\n", "\n", "", "last"} {
		line, err := readLine(br, 50)
		if string(line) != want || (want == "" && line != nil) {
			t.Fatalf("got %q (%v), want %q", line, err, want)
		}
	}
}
