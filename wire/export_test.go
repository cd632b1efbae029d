package wire

// FieldRow is a row of the field policy, for the tests.
type FieldRow struct {
	Dialect, Field string
	Modelled       bool
	Consumed       bool
}

// FieldRows are the rows of the field policy.
func FieldRows() []FieldRow {
	out := make([]FieldRow, len(fieldRules))
	for i, r := range fieldRules {
		out[i] = FieldRow{r.dialect, r.field, r.modelled, r.consumed}
	}
	return out
}
