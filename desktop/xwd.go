package desktop

import (
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"math/bits"
)

// decodeXWD reads the X Window Dump that `xwd -root` writes (file version 7, ZPixmap,
// TrueColor, 24 or 32 bits per pixel: what Xvfb's 24-bit screen gives) into an RGBA image.
func decodeXWD(b []byte) (*image.RGBA, error) {
	const headerWords = 25
	if len(b) < headerWords*4 {
		return nil, fmt.Errorf("xwd: %d bytes, shorter than a header", len(b))
	}
	var h [headerWords]uint32
	for i := range h {
		h[i] = binary.BigEndian.Uint32(b[i*4:])
	}
	headerSize, version, format := h[0], h[1], h[2]
	width, height := int(h[4]), int(h[5])
	byteOrder, bpp, bpl := h[7], int(h[11]), int(h[12])
	visual, rmask, gmask, bmask, ncolors := h[13], h[14], h[15], h[16], h[19]
	const trueColor, zPixmap = 4, 2
	switch {
	case version != 7:
		return nil, fmt.Errorf("xwd: file version %d, want 7", version)
	case format != zPixmap || visual != trueColor:
		return nil, fmt.Errorf("xwd: format %d visual %d, want ZPixmap TrueColor", format, visual)
	case bpp != 24 && bpp != 32:
		return nil, fmt.Errorf("xwd: %d bits per pixel, want 24 or 32", bpp)
	case width <= 0 || height <= 0 || width > 16384 || height > 16384 || bpl < width*bpp/8:
		return nil, fmt.Errorf("xwd: bad geometry %dx%d, %d bytes per line", width, height, bpl)
	case rmask == 0 || gmask == 0 || bmask == 0:
		return nil, fmt.Errorf("xwd: no colour masks")
	}
	off := int64(headerSize) + int64(ncolors)*12
	if need := off + int64(bpl)*int64(height); int64(len(b)) < need {
		return nil, fmt.Errorf("xwd: %d bytes, want %d", len(b), need)
	}
	data := b[off:]
	shift := func(m uint32) (int, int) { return bits.TrailingZeros32(m), bits.OnesCount32(m) }
	rs, rn := shift(rmask)
	gs, gn := shift(gmask)
	bs, bn := shift(bmask)
	scale := func(v uint32, n int) uint8 {
		if n >= 8 {
			return uint8(v >> (n - 8))
		}
		return uint8(v * 255 / (1<<n - 1))
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	step := bpp / 8
	for y := 0; y < height; y++ {
		row := data[y*bpl:]
		for x := 0; x < width; x++ {
			p := row[x*step:]
			var v uint32
			if byteOrder == 0 { // LSBFirst
				v = uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16
				if step == 4 {
					v |= uint32(p[3]) << 24
				}
			} else {
				v = uint32(p[0])<<16 | uint32(p[1])<<8 | uint32(p[2])
				if step == 4 {
					v = v<<8 | uint32(p[3])
				}
			}
			img.SetRGBA(x, y, color.RGBA{
				R: scale((v&rmask)>>rs, rn), G: scale((v&gmask)>>gs, gn), B: scale((v&bmask)>>bs, bn), A: 255})
		}
	}
	return img, nil
}
