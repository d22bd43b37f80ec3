package observe

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// TracingConfigured reports whether the standard OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variable asks for traces to be exported.
func TracingConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// OTLP returns a tracer provider exporting spans over OTLP/HTTP as the standard
// OTEL_EXPORTER_OTLP_* variables configure it, with the Resource of service and
// instance, and the function that flushes and stops it.
func OTLP(ctx context.Context, service, instance string) (trace.TracerProvider, func(context.Context) error, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("observe: OTLP exporter: %w", err)
	}
	res, err := Resource(ctx, service, instance)
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Resource describes this host to a tracing backend: the SDK's defaults, service.name
// service, service.instance.id instance (the name the host holds leases under, so that
// a span is found from a lease and the other way round) and host.name, then what the
// standard OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME variables say, which win.
func Resource(ctx context.Context, service, instance string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(service)}
	if instance != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(instance))
	}
	if h, err := os.Hostname(); err == nil {
		attrs = append(attrs, semconv.HostName(h))
	}
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("observe: resource from OTEL_RESOURCE_ATTRIBUTES/OTEL_SERVICE_NAME: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err == nil {
		res, err = resource.Merge(res, env)
	}
	if err != nil {
		return nil, fmt.Errorf("observe: resource: %w", err)
	}
	return res, nil
}
