package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	"github.com/podbot/podbot/errdefs"
	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// fakeImageAPI records calls and answers from fixed data.
type fakeImageAPI struct {
	images     map[string]map[string]string // ref -> labels
	buildBody  string
	buildCtx   []byte
	buildOpts  build.ImageBuildOptions
	builds     int
	imports    int
	importRefs []string
}

func (f *fakeImageAPI) ImageBuild(_ context.Context, ctx io.Reader, o build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	f.builds++
	f.buildCtx, _ = io.ReadAll(ctx)
	f.buildOpts = o
	if !strings.Contains(f.buildBody, `"error"`) {
		for _, tag := range o.Tags {
			f.images[tag] = o.Labels
		}
	}
	return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(f.buildBody))}, nil
}

func (f *fakeImageAPI) ImageImport(_ context.Context, _ image.ImportSource, ref string, _ image.ImportOptions) (io.ReadCloser, error) {
	f.imports++
	f.importRefs = append(f.importRefs, ref)
	return io.NopCloser(strings.NewReader(`{"status":"sha256:abc"}`)), nil
}

func (f *fakeImageAPI) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	labels, ok := f.images[ref]
	if !ok {
		return image.InspectResponse{}, errors.New("no such image")
	}
	cfg := &dockerspec.DockerOCIImageConfig{}
	cfg.Labels = labels
	return image.InspectResponse{ID: "sha256:0123456789abcdef", Config: cfg}, nil
}

func TestBuildImageBuildsThenSkips(t *testing.T) {
	api := &fakeImageAPI{images: map[string]map[string]string{BaseImageRef: nil},
		buildBody: `{"stream":"Step 1/2 : FROM base\n"}{"stream":"Successfully built 0123\n"}`}
	var lines []string
	opts := ImageBuildOptions{Bootstrap: true, CacheDir: t.TempDir(), Progress: func(l string) { lines = append(lines, l) }}
	res, err := BuildImage(context.Background(), api, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || api.builds != 1 || api.imports != 0 {
		t.Fatalf("first build: %+v builds=%d imports=%d", res, api.builds, api.imports)
	}
	if res.Image != DefaultImage() || len(res.Tags) != 2 || res.Tags[1] != sandboximage.DefaultImageName+":latest" {
		t.Errorf("tags %v", res.Tags)
	}
	if *api.buildOpts.BuildArgs[sandboximage.BaseArg] != BaseImageRef || api.buildOpts.Version != build.BuilderV1 {
		t.Errorf("build options %+v", api.buildOpts)
	}
	if api.buildOpts.Labels[sandboximage.VersionLabel] != Version {
		t.Errorf("version label missing: %v", api.buildOpts.Labels)
	}
	names := tarNames(t, api.buildCtx)
	if strings.Join(names, ",") != sandboximage.ContainerfileName+","+sandboximage.AskpassContextName {
		t.Errorf("build context holds %v", names)
	}
	if !containsLine(lines, "Step 1/2 : FROM base") {
		t.Errorf("progress lines %v", lines)
	}
	res, err = BuildImage(context.Background(), api, opts)
	if err != nil || !res.Skipped || api.builds != 1 {
		t.Fatalf("second build not skipped: %+v err=%v builds=%d", res, err, api.builds)
	}
	opts.Force = true
	if _, err := BuildImage(context.Background(), api, ImageBuildOptions{Force: true}); err != nil || api.builds != 2 {
		t.Fatalf("forced build: err=%v builds=%d", err, api.builds)
	}
}

func TestBuildImageStreamErrorIsContainerError(t *testing.T) {
	api := &fakeImageAPI{images: map[string]map[string]string{},
		buildBody: `{"stream":"Step 1/2\n"}{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}`}
	_, err := BuildImage(context.Background(), api, ImageBuildOptions{})
	if !errors.Is(err, errdefs.ErrContainer) || !strings.Contains(err.Error(), "manifest unknown") || !strings.Contains(err.Error(), "--bootstrap") {
		t.Fatalf("err = %v", err)
	}
}

func TestBootstrapNeedsCacheDir(t *testing.T) {
	api := &fakeImageAPI{images: map[string]map[string]string{}}
	_, err := BuildImage(context.Background(), api, ImageBuildOptions{Bootstrap: true})
	if !errors.Is(err, errdefs.ErrConfig) {
		t.Fatalf("err = %v", err)
	}
}

func tarNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
