// An independent checker of aer1's transparency logs, built on Go's golang.org/x/mod/sumdb
// (note and tlog) and crypto/ed25519. The tests build it with GO111MODULE=off against the
// Debian package's sources and run it on logs and proofs the Python code wrote.
//
//	peer log DIR VKEY OLDSIZE OLDROOT INDEX,INDEX,...   checkpoint signature, tree from tiles,
//	                                                    inclusion of each entry, consistency with OLD
//	peer proof PROOF ENTRY VKEY [WITNESS_VKEY...]       a tlog-proof: signature, cosignatures, inclusion
//	peer sign TEXT SKEY                                 a note signed by x/mod (printed)
package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "peer: "+format+"\n", args...)
	os.Exit(1)
}

// parseCheckpoint reads a C2SP checkpoint body: origin, size, base64 root.
func parseCheckpoint(text string) (string, int64, tlog.Hash) {
	lines := strings.Split(text, "\n")
	if len(lines) < 4 {
		fail("checkpoint: %d lines", len(lines))
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != 32 {
		fail("checkpoint root: %v", err)
	}
	var h tlog.Hash
	copy(h[:], raw)
	return lines[0], n, h
}

func openCheckpoint(msg []byte, vkey string) (*note.Note, int64, tlog.Hash) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		fail("vkey: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		fail("note.Open: %v", err)
	}
	_, size, root := parseCheckpoint(n.Text)
	return n, size, root
}

// dirTiles serves x/mod's tiles (tile/<H>/<L>/..., entries at tile/<H>/data/...) from a C2SP
// layout (tile/<L>/..., tile/entries/...).
type dirTiles struct{ dir string }

func (d dirTiles) Height() int { return 8 }

func c2spPath(t tlog.Tile) string {
	p := strings.Replace(t.Path(), fmt.Sprintf("tile/%d/", t.H), "tile/", 1)
	return strings.Replace(p, "tile/data/", "tile/entries/", 1)
}

func (d dirTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(c2spPath(t))))
		if errors.Is(err, os.ErrNotExist) && t.W < 256 { // a partial tile gone: the full one's prefix
			full := t
			full.W = 256
			data, err = os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(c2spPath(full))))
			if err == nil && len(data) >= t.W*32 {
				data = data[:t.W*32]
			}
		}
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (d dirTiles) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

// entry reads entry i of a tree of size n from its bundle.
func entry(dir string, i, n int64) []byte {
	t := tlog.Tile{H: 8, L: -1, N: i / 256, W: 256}
	if (i/256+1)*256 > n {
		t.W = int(n - (i/256)*256)
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c2spPath(t))))
	if err != nil {
		fail("bundle: %v", err)
	}
	for k := int64(0); ; k++ {
		if len(data) < 2 {
			fail("bundle %s: cut off", c2spPath(t))
		}
		l := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+l {
			fail("bundle %s: cut off", c2spPath(t))
		}
		if k == i%256 {
			return data[2 : 2+l]
		}
		data = data[2+l:]
	}
}

func checkLog(dir, vkey, oldSize, oldRoot, indexes string) {
	msg, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		fail("checkpoint: %v", err)
	}
	_, size, root := openCheckpoint(msg, vkey)
	tree := tlog.Tree{N: size, Hash: root}
	hr := tlog.TileHashReader(tree, dirTiles{dir})
	got, err := tlog.TreeHash(size, hr)
	if err != nil {
		fail("TreeHash: %v", err)
	}
	if got != root {
		fail("tree hash from tiles: got %v, want %v", got, root)
	}
	fmt.Printf("ok signature tree %d\n", size)
	if indexes != "" {
		for _, s := range strings.Split(indexes, ",") {
			i, _ := strconv.ParseInt(s, 10, 64)
			p, err := tlog.ProveRecord(size, i, hr)
			if err != nil {
				fail("ProveRecord %d: %v", i, err)
			}
			if err := tlog.CheckRecord(p, size, root, i, tlog.RecordHash(entry(dir, i, size))); err != nil {
				fail("CheckRecord %d: %v", i, err)
			}
		}
		fmt.Printf("ok inclusion %s\n", indexes)
	}
	old, _ := strconv.ParseInt(oldSize, 10, 64)
	if old > 0 {
		raw, err := base64.StdEncoding.DecodeString(oldRoot)
		if err != nil || len(raw) != 32 {
			fail("old root: %v", err)
		}
		var oh tlog.Hash
		copy(oh[:], raw)
		p, err := tlog.ProveTree(size, old, hr)
		if err != nil {
			fail("ProveTree: %v", err)
		}
		if err := tlog.CheckTree(p, size, root, old, oh); err != nil {
			fail("CheckTree: %v", err)
		}
		fmt.Printf("ok consistency %d %d\n", old, size)
	}
}

func checkCosignature(n *note.Note, vkey string) {
	parts := strings.SplitN(vkey, "+", 3)
	raw, err := base64.StdEncoding.DecodeString(parts[len(parts)-1])
	if len(parts) != 3 || err != nil || len(raw) != 33 || raw[0] != 0x04 {
		fail("witness vkey %q", vkey)
	}
	name, id := parts[0], parts[1]
	for _, s := range n.UnverifiedSigs {
		if s.Name != name || fmt.Sprintf("%08x", s.Hash) != id {
			continue
		}
		sig, _ := base64.StdEncoding.DecodeString(s.Base64)
		if len(sig) != 4+8+64 {
			fail("cosignature by %s: %d bytes", name, len(sig))
		}
		ts := binary.BigEndian.Uint64(sig[4:12])
		msg := fmt.Sprintf("cosignature/v1\ntime %d\n%s", ts, n.Text)
		if !ed25519.Verify(ed25519.PublicKey(raw[1:]), []byte(msg), sig[12:]) {
			fail("cosignature by %s does not verify", name)
		}
		fmt.Printf("ok cosignature %s %d\n", name, ts)
		return
	}
	fail("no cosignature by %s", name)
}

func checkProof(proofFile, entryFile, vkey string, witnesses []string) {
	data, err := os.ReadFile(proofFile)
	if err != nil {
		fail("%v", err)
	}
	e, err := os.ReadFile(entryFile)
	if err != nil {
		fail("%v", err)
	}
	split := bytes.Index(data, []byte("\n\n"))
	if split < 0 {
		fail("proof: no empty line")
	}
	lines := strings.Split(string(data[:split]), "\n")
	if lines[0] != "c2sp.org/tlog-proof@v1" {
		fail("proof header %q", lines[0])
	}
	k := 1
	if strings.HasPrefix(lines[k], "extra ") {
		k++
	}
	if !strings.HasPrefix(lines[k], "index ") {
		fail("proof: no index line")
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[k], "index "), 10, 64)
	if err != nil {
		fail("proof index: %v", err)
	}
	var p tlog.RecordProof
	for _, l := range lines[k+1:] {
		raw, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(raw) != 32 {
			fail("proof hash %q", l)
		}
		var h tlog.Hash
		copy(h[:], raw)
		p = append(p, h)
	}
	n, size, root := openCheckpoint(data[split+2:], vkey)
	if err := tlog.CheckRecord(p, size, root, index, tlog.RecordHash(e)); err != nil {
		fail("CheckRecord: %v", err)
	}
	fmt.Printf("ok proof %d %d\n", index, size)
	for _, w := range witnesses {
		checkCosignature(n, w)
	}
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: peer log|proof|sign ...")
	}
	switch os.Args[1] {
	case "log":
		if len(os.Args) != 7 {
			fail("usage: peer log DIR VKEY OLDSIZE OLDROOT INDEXES")
		}
		checkLog(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6])
	case "proof":
		if len(os.Args) < 5 {
			fail("usage: peer proof PROOF ENTRY VKEY [WITNESS...]")
		}
		checkProof(os.Args[2], os.Args[3], os.Args[4], os.Args[5:])
	case "sign":
		text, err := os.ReadFile(os.Args[2])
		if err != nil {
			fail("%v", err)
		}
		s, err := note.NewSigner(os.Args[3])
		if err != nil {
			fail("signer key: %v", err)
		}
		msg, err := note.Sign(&note.Note{Text: string(text)}, s)
		if err != nil {
			fail("sign: %v", err)
		}
		os.Stdout.Write(msg)
	default:
		fail("unknown command %q", os.Args[1])
	}
}
