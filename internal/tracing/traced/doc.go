// Package traced wraps a storage.Storage and a provider.Provider with
// OpenTelemetry spans: service.New installs them when its Config has a
// TracerProvider. The tracer and the attribute names are package tracing's,
// which the storage adapters use too.
package traced
