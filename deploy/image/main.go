// Command image builds the FreqLens container image as an OCI archive,
// without a daemon and without pulling a base image:
//
//	go run ./deploy/image -out freqlens.oci.tar
//	podman run --rm oci-archive:freqlens.oci.tar version
//
// The image is one layer on an empty base: the freqlens binary built static
// (CGO off, the time zone database embedded by the model package), the CA
// certificates of the build machine for TLS to the brokers, and a non-root
// user (uid and gid 65532) whose home is the working directory. Its
// entrypoint is freqlens, its default command `demo` listening on all
// addresses, and it exposes the metrics listener's port, 9464.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the image's user and group id, the one distroless images use.
const nonRoot = 65532

func main() {
	out := flag.String("out", "freqlens.oci.tar", "where to write the OCI archive")
	tag := flag.String("tag", "freqlens:latest", "the image's reference name in the archive")
	certs := flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of CA certificates to put in the image")
	arch := flag.String("arch", runtime.GOARCH, "the image's CPU architecture (GOARCH)")
	flag.Parse()
	if err := build(*out, *tag, *certs, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
}

// build writes the image to out as an OCI archive (a tar of an OCI image
// layout), the one image in it named tag.
func build(out, tag, certsPath, arch string) error {
	dir, err := os.MkdirTemp("", "freqlens-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "freqlens")
	gobuild := exec.Command("go", "build", "-trimpath", "-buildvcs=auto", "-ldflags=-s -w", "-o", bin, "github.com/freqlens/freqlens/cmd/freqlens")
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	gobuild.Stdout, gobuild.Stderr = os.Stderr, os.Stderr
	if err := gobuild.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	certs, err := os.ReadFile(certsPath)
	if err != nil {
		return fmt.Errorf("CA certificates: %w (install Debian's ca-certificates, or give --ca-certificates)", err)
	}
	layer, err := rootLayer(binary, certs)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible: the same inputs, the same digest
	cf.Config = v1.Config{
		Entrypoint:   []string{"/usr/local/bin/freqlens"},
		Cmd:          []string{"demo", "--metrics-addr", "0.0.0.0:9464"}, // reachable through a published port
		User:         fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/usr/local/bin", "HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"9464/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "freqlens",
			"org.opencontainers.image.description": "streaming forecaster for sensor feeds, with per-frequency attributions",
			"org.opencontainers.image.source":      "https://github.com/freqlens/freqlens",
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	lay := filepath.Join(dir, "layout")
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return err
	}
	return tarDir(out, lay)
}

// rootLayer is the image's file system: the binary, the CA certificates,
// the user's passwd and group entries, its home and /tmp.
func rootLayer(binary, certs []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	dirs := []struct {
		name      string
		mode, uid int64
	}{{"etc", 0o755, 0}, {"etc/ssl", 0o755, 0}, {"etc/ssl/certs", 0o755, 0}, {"usr", 0o755, 0}, {"usr/local", 0o755, 0},
		{"usr/local/bin", 0o755, 0}, {"home", 0o755, 0}, {"home/nonroot", 0o700, nonRoot}, {"tmp", 0o1777, 0}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode, Uid: int(d.uid), Gid: int(d.uid), ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)},
		{"etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", nonRoot)},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, certs},
		{"usr/local/bin/freqlens", 0o755, binary},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// tarDir writes the files under dir to a tar archive at out, paths
// relative to dir in lexical order: the OCI archive that `podman run
// oci-archive:out` reads.
func tarDir(out, dir string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		// The archive's own headers carry nothing of the build machine, so
		// that the same image makes the same bytes.
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Unix(0, 0).UTC(), time.Time{}, time.Time{}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.Format = tar.FormatPAX
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	return errors.Join(err, tw.Close(), f.Close())
}
