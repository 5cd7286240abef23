// Package helm tests the Helm chart in deploy/helm/freqlens: `helm lint`,
// and `helm template` for several value sets, every rendered object decoded
// strictly into the Kubernetes API types (an unknown or misspelt field
// fails), the rendered serve configuration loaded and validated by the
// service's own loader, and the memory from the capacity formula. It needs
// helm on the PATH (`go install helm.sh/helm/v3/cmd/helm@v3.22.0`); without
// it the tests skip, unless FREQLENS_REQUIRE_HELM=1 (CI) makes that a
// failure.
package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/freqlens/freqlens/config"
)

const chart = "freqlens"

// helmBin returns helm's path, skipping the test when it is not installed
// (failing it under FREQLENS_REQUIRE_HELM=1).
func helmBin(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("FREQLENS_REQUIRE_HELM") == "1" {
			t.Fatal("helm is not on the PATH and FREQLENS_REQUIRE_HELM=1: go install helm.sh/helm/v3/cmd/helm@v3.22.0")
		}
		t.Skip("helm is not installed (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	}
	return path
}

// render runs helm template with values (YAML, "" for the defaults) and
// returns the rendered documents, or helm's error output when it fails.
func render(t *testing.T, values string) ([]string, string, error) {
	t.Helper()
	args := []string{"template", "rel", chart}
	if values != "" {
		f := filepath.Join(t.TempDir(), "values.yaml") // helm splits --values at commas: the test names have none
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", f)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(helmBin(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, errb.String(), err
	}
	var docs []string
	for _, d := range strings.Split(out.String(), "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---")) != "" {
			docs = append(docs, d)
		}
	}
	return docs, errb.String(), nil
}

func TestLint(t *testing.T) {
	out, err := exec.Command(helmBin(t), "lint", "--strict", chart).CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

// rendered is what a value set renders to, decoded.
type rendered struct {
	deployment *appsv1.Deployment
	configMap  *corev1.ConfigMap
	kinds      map[string]map[string]any // other kinds, as maps
}

// decode decodes every document strictly into its API type: apps/v1
// Deployment, v1 ConfigMap and Service, policy/v1 PodDisruptionBudget;
// the custom resources (ServiceMonitor, PrometheusRule, ScaledObject) into
// maps, kept by kind.
func decode(t *testing.T, docs []string) rendered {
	t.Helper()
	r := rendered{kinds: map[string]map[string]any{}}
	for _, d := range docs {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(d), &head); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, d)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			r.deployment = &appsv1.Deployment{}
			obj = r.deployment
		case "v1 ConfigMap":
			r.configMap = &corev1.ConfigMap{}
			obj = r.configMap
		case "v1 Service":
			obj = &corev1.Service{}
		case "policy/v1 PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "monitoring.coreos.com/v1 ServiceMonitor", "monitoring.coreos.com/v1 PrometheusRule", "keda.sh/v1alpha1 ScaledObject":
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(d), &m); err != nil {
				t.Fatal(err)
			}
			r.kinds[head.Kind] = m
			continue
		default:
			t.Fatalf("the chart renders a %s %s, which the test does not know", head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(d), obj); err != nil {
			t.Fatalf("%s does not decode strictly into its API type: %v\n%s", head.Kind, err, d)
		}
	}
	if r.deployment == nil || r.configMap == nil {
		t.Fatal("the chart renders no Deployment or no ConfigMap")
	}
	return r
}

// checkConfig loads the rendered serve configuration with the service's
// own loader and validates it; a configuration that names the secrets'
// files (which exist only in the pod) is loaded, and its paths checked
// against the Deployment's mounts.
func checkConfig(t *testing.T, r rendered) {
	t.Helper()
	text := r.configMap.Data["freqlens.yaml"]
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatalf("the rendered freqlens.yaml does not load: %v\n%s", err, text)
	}
	if want := fmt.Sprintf("0.0.0.0:%d", r.deployment.Spec.Template.Spec.Containers[0].Ports[1].ContainerPort); cfg.ProbeListen != want {
		t.Errorf("metrics.probe_listen is %q, want %q: the probes' port", cfg.ProbeListen, want)
	}
	if !strings.Contains(text, "/etc/freqlens/") {
		if err := cfg.Validate(); err != nil {
			t.Fatalf("the rendered freqlens.yaml does not validate: %v", err)
		}
		return
	}
	mounts := map[string]bool{}
	for _, m := range r.deployment.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = true
	}
	for _, dir := range []string{"/etc/freqlens/ca", "/etc/freqlens/web"} {
		if strings.Contains(text, dir+"/") && !mounts[dir] {
			t.Errorf("the configuration names a file under %s, which the Deployment does not mount", dir)
		}
	}
}

func TestTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		kinds        []string // the custom resources it renders
		memory       string   // the container's memory request
		gomemlimit   string
	}{
		{name: "defaults", memory: "233Mi", gomemlimit: "314MiB"},
		{name: "100000 series a replica", values: "capacity: {seriesPerReplica: 100000}\n", memory: "1270Mi", gomemlimit: "1714MiB"},
		{name: "secrets and monitoring and KEDA", values: `
secrets: {saslPassword: kafka-sasl, brokerCA: kafka-ca, webConfig: freqlens-web}
config:
  kafka: {sasl: {mechanism: scram-sha-512, username: freqlens}}
serviceMonitor: {enabled: true}
prometheusRule: {enabled: true}
keda: {enabled: true, maxReplicas: 6, authenticationRef: freqlens-kafka}
`, kinds: []string{"PrometheusRule", "ScaledObject", "ServiceMonitor"}, memory: "233Mi", gomemlimit: "314MiB"},
		{name: "a trained model on a claim", values: `
model: {file: traffic.safetensors, volume: {persistentVolumeClaim: {claimName: freqlens-models, readOnly: true}}}
config: {model: {bootstrap: {min_history: 0s}}}
`, memory: "233Mi", gomemlimit: "314MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, stderr, err := render(t, tc.values)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, stderr)
			}
			r := decode(t, docs)
			checkConfig(t, r)
			if !strings.Contains(r.configMap.Data["freqlens.yaml"], "- rel-freqlens.default.svc\n") {
				t.Error("metrics.allowed_hosts lacks the Service's name: a scrape or port-forward through it would be refused")
			}
			var kinds []string
			for k := range r.kinds {
				kinds = append(kinds, k)
			}
			if !sameSet(kinds, tc.kinds) {
				t.Errorf("custom resources %v, want %v", kinds, tc.kinds)
			}
			spec := r.deployment.Spec.Template.Spec
			c := spec.Containers[0]
			if got := c.Resources.Requests.Memory().String(); got != tc.memory {
				t.Errorf("memory request %s, want %s (117 MB + 11.8 KB a series)", got, tc.memory)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["GOMEMLIMIT"] != tc.gomemlimit {
				t.Errorf("GOMEMLIMIT %q, want %q", env["GOMEMLIMIT"], tc.gomemlimit)
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
				t.Error("the probes are not /readyz and /healthz")
			}
			for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
				if p == nil || p.HTTPGet.Port.String() != "probes" || p.HTTPGet.Scheme != "" {
					t.Errorf("a probe reaches %v: want the plain port named probes (metrics.probe_listen), which needs no password", p)
				}
			}
			if g := spec.TerminationGracePeriodSeconds; g == nil || *g != 40 {
				t.Errorf("terminationGracePeriodSeconds %v, want the shutdown timeout 30 s and 10 s more", g)
			}
			for _, v := range spec.Volumes {
				if v.Name == "models" && (v.EmptyDir != nil) == (v.PersistentVolumeClaim != nil) {
					t.Errorf("the models volume has %v and %v: want exactly one source (the API server refuses two)", v.EmptyDir, v.PersistentVolumeClaim)
				}
			}
			if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Error("the pods may run as root")
			}
			if rule, ok := r.kinds["PrometheusRule"]; ok {
				checkRules(t, rule)
			}
			if so, ok := r.kinds["ScaledObject"]; ok {
				spec, _ := so["spec"].(map[string]any)
				triggers, _ := spec["triggers"].([]any)
				trig, _ := triggers[0].(map[string]any)
				if ref, _ := trig["authenticationRef"].(map[string]any); ref["name"] != "freqlens-kafka" {
					t.Errorf("the KEDA trigger's authenticationRef is %v, want the keda.authenticationRef given", trig["authenticationRef"])
				}
			}
		})
	}
}

// checkRules compares the PrometheusRule's groups with
// deploy/prometheus/alerts.yml, the rules promtool tests.
func checkRules(t *testing.T, rule map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	spec, _ := rule["spec"].(map[string]any)
	if !reflect.DeepEqual(spec["groups"], file["groups"]) {
		t.Error("the PrometheusRule's groups are not deploy/prometheus/alerts.yml's")
	}
}

// TestTemplatesRefuse: values the chart cannot honour stop helm template
// with a message naming them.
func TestTemplatesRefuse(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"a shutdown timeout in hours", "config: {service: {shutdown_timeout: 2h}}\n", "shutdown_timeout"},
		{"KEDA beyond any partition count", "keda: {enabled: true, maxReplicas: 1000}\n", "keda.maxReplicas"},
		{"KEDA without the brokers' SASL", "keda: {enabled: true}\nconfig: {kafka: {brokers: [\"kafka:9092\"], sasl: {mechanism: SCRAM-SHA-512, username: u}}}\n", "keda.authenticationRef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := render(t, tc.values)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("helm template: err %v, stderr %q; want a refusal naming %s", err, stderr, tc.want)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}
