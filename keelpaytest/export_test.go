package keelpaytest

// SchemaOf is the PostgreSQL schema of a kit started WithPostgres.
func SchemaOf(k *Kit) string { return k.schema }
