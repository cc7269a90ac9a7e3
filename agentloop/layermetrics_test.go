package agentloop_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// TestOperate70_MetricsFromInsideTheLayers runs an agent with the
// key-value memory and the entity memory under a manual metric reader,
// and checks the figures only the layers know: key-value entries and
// scopes (gauges), parent-fallback lookups and expired entries, entity
// extractions, evictions and the tracked count, and a compare-and-swap
// the entity layer lost to a second writer (counted by the store the
// agent hands its layers), each under its layer's ID.
func TestOperate70_MetricsFromInsideTheLayers(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	store := storage.NewMemoryStore()
	kvl, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := entitymemory.New(entitymemory.Config{Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	work := agentloop.NewContextTool("work", "Use the key-value memory.", nil, func(ctx context.Context, run *agentloop.ToolContext, _ struct{}) (string, error) {
		mem, err := kv.From(run.Stack(), "")
		if err != nil {
			return "", err
		}
		if err := kv.Set(mem, "lang", "go"); err != nil {
			return "", err
		}
		if err := kv.SetWith(mem, "tmp", 1, kv.Meta{TTL: time.Nanosecond}); err != nil {
			return "", err
		}
		sub, err := mem.Child("sub")
		if err != nil {
			return "", err
		}
		if v, ok, err := kv.Get[string](sub, "lang"); err != nil || !ok || v != "go" {
			return "", err
		}
		time.Sleep(time.Millisecond)
		mem.Purge()
		return "ok", nil
	})
	list := func(name string, ids ...string) agentloop.Tool {
		return agentloop.NewTool(name, "List pages.", nil, func(context.Context, struct{}) (string, error) {
			var b strings.Builder
			b.WriteString(`{"pages":[`)
			for i, id := range ids {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"id":"` + id + `","title":"Page ` + id + `"}`)
			}
			b.WriteString(`]}`)
			return b.String(), nil
		})
	}
	// bump rewrites the entity layer's stored state as another writer
	// would, so the layer's next save loses its compare-and-swap.
	bump := agentloop.NewTool("bump", "Another writer.", nil, func(ctx context.Context, _ struct{}) (string, error) {
		keys, err := store.List(ctx, "layers/"+entitymemory.DefaultStorageID+"/")
		// The state record, not one of the archive's.
		i := slices.IndexFunc(keys, func(k string) bool { return strings.HasSuffix(k, "/"+entitymemory.StateName) })
		if err != nil || i < 0 {
			return "", err
		}
		it, err := store.Get(ctx, keys[i])
		if err != nil {
			return "", err
		}
		_, err = store.Put(ctx, keys[i], it.Value, storage.AnyVersion)
		return "bumped", err
	})
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("work", `{}`), agenttest.Call("list_a", `{}`))),
		agenttest.Reply(agenttest.Text("done")),
		agenttest.Reply(agenttest.Calls(agenttest.Call("bump", `{}`))),
		agenttest.Reply(agenttest.Calls(agenttest.Call("list_b", `{}`))),
		agenttest.Reply(agenttest.Text("done")),
	)
	a, err := agentloop.New(agentloop.Config{
		Model:         model,
		Store:         store,
		Layers:        []layer.Layer{kvl, ents},
		Tools:         []agentloop.Tool{work, list("list_a", "p1", "p2"), list("list_b", "p3", "p4"), bump},
		MeterProvider: mp,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"first", "second"} {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	// got[metric][layer] is the counter's sum or the gauge's last value.
	got := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			default:
				continue
			}
			for _, dp := range points {
				id, _ := dp.Attributes.Value("memlayer.layer")
				if got[m.Name] == nil {
					got[m.Name] = map[string]int64{}
				}
				got[m.Name][id.AsString()] += dp.Value
			}
		}
	}
	for _, w := range []struct {
		metric, layer string
		min, max      int64
	}{
		{"memlayer.layer.entries", kv.DefaultLayerID, 1, 1}, // "lang"; "tmp" expired and was purged
		{"memlayer.layer.scopes", kv.DefaultLayerID, 1, 1},  // the second run's scope: the child "sub" is not persisted
		{"memlayer.layer.fallback_lookups", kv.DefaultLayerID, 1, 1},
		{"memlayer.layer.expired", kv.DefaultLayerID, 1, 1},
		{"memlayer.layer.extractions", entitymemory.DefaultID, 4, 4},
		{"memlayer.layer.evictions", entitymemory.DefaultID, 2, 2},
		{"memlayer.layer.entries", entitymemory.DefaultID, 2, 2},
		{"memlayer.layer.cas.conflicts", entitymemory.DefaultID, 1, 3},
	} {
		v, ok := got[w.metric][w.layer]
		if !ok || v < w.min || v > w.max {
			t.Errorf("%s{layer=%s} = %d (recorded: %v), want %d..%d", w.metric, w.layer, v, ok, w.min, w.max)
		}
	}
}
