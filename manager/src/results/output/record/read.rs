//! CSV rows read back into records by their own `Deserialize`: a serde
//! `Deserializer` that hands the record each field's cell, found by
//! column name, and reads the cell as the field's type asks.

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::Serialize;

use super::{field_names, CsvPlan, SchemaError};

/// Reads a CSV file of records laid out by `plan`: columns by name (every
/// field needs its column; derived columns and unknown ones are ignored),
/// each cell read by the field's own `Deserialize`. Errors name `source`,
/// the line and the column. Exact: the writer prints numbers with
/// `Display`, the shortest text that parses back to the same `f64`.
pub fn read_csv<R: Serialize + DeserializeOwned>(
    input: impl std::io::Read,
    source: &str,
    plan: &CsvPlan<R>,
) -> anyhow::Result<Vec<R>> {
    use anyhow::Context;
    let mut reader = csv::Reader::from_reader(input);
    let headers = reader
        .headers()
        .with_context(|| format!("{source}: no header"))?
        .clone();
    let fields = field_names::<R>();
    let columns: Vec<usize> = plan
        .field_columns
        .iter()
        .map(|name| {
            headers
                .iter()
                .position(|h| h == *name)
                .with_context(|| format!("{source}: no column '{name}'"))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut out = Vec::new();
    for (k, row) in reader.records().enumerate() {
        let line = k + 2;
        let row = row.with_context(|| format!("{source}: line {line}"))?;
        let r = R::deserialize(Row {
            row: &row,
            fields,
            columns: &columns,
            names: &plan.field_columns,
        })
        .map_err(|e| anyhow::anyhow!("{source}: line {line}, {e}"))?;
        out.push(r);
    }
    Ok(out)
}

/// One CSV row as a record.
struct Row<'r> {
    row: &'r csv::StringRecord,
    fields: &'static [&'static str],
    columns: &'r [usize],
    names: &'r [&'static str],
}

impl<'de> de::Deserializer<'de> for Row<'_> {
    type Error = SchemaError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_map(RowFields { row: self, k: 0 })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct RowFields<'r> {
    row: Row<'r>,
    k: usize,
}

impl<'de> de::MapAccess<'de> for RowFields<'_> {
    type Error = SchemaError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, SchemaError> {
        match self.row.fields.get(self.k) {
            Some(f) => seed.deserialize((*f).into_deserializer()).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, SchemaError> {
        let k = self.k;
        self.k += 1;
        let column = self.row.names[k];
        let text = self.row.row.get(self.row.columns[k]).unwrap_or("");
        seed.deserialize(Cell { text })
            .map_err(|e| SchemaError(format!("column {column}: {e}")))
    }
}

/// One cell, read as the field's type asks.
struct Cell<'c> {
    text: &'c str,
}

impl Cell<'_> {
    fn number<T: std::str::FromStr>(&self, what: &str) -> Result<T, SchemaError> {
        self.text
            .parse()
            .map_err(|_| SchemaError(format!("'{}' is not {what}", self.text)))
    }
}

impl<'de> de::Deserializer<'de> for Cell<'_> {
    type Error = SchemaError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        // A cell's type is the field's; untyped (an untagged enum): a
        // number if it reads as one, else text.
        match self.text.parse::<f64>() {
            Ok(x) => v.visit_f64(x),
            Err(_) => v.visit_str(self.text),
        }
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        match self.text {
            "true" => v.visit_bool(true),
            "false" => v.visit_bool(false),
            t => Err(SchemaError(format!("'{t}' is not true or false"))),
        }
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_u64(self.number("a whole number")?)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_u64(self.number("a whole number")?)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_u64(self.number("a whole number")?)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_u64(self.number("a whole number")?)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_i64(self.number("a whole number")?)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_i64(self.number("a whole number")?)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_i64(self.number("a whole number")?)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_i64(self.number("a whole number")?)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_f64(self.number("a number")?)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_f64(self.number("a number")?)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_str(self.text)
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_str(self.text)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        if self.text.is_empty() {
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SchemaError> {
        v.visit_seq(ListCell(self.text.split_whitespace()))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, SchemaError> {
        let d: de::value::StrDeserializer<'_, SchemaError> = self.text.into_deserializer();
        v.visit_enum(d)
            .map_err(|_| SchemaError(format!("unknown value '{}'", self.text)))
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, SchemaError> {
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit unit_struct tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// The elements of a list cell (space-separated).
struct ListCell<'c>(std::str::SplitWhitespace<'c>);

impl<'de> de::SeqAccess<'de> for ListCell<'_> {
    type Error = SchemaError;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, SchemaError> {
        self.0
            .next()
            .map(|text| seed.deserialize(Cell { text }))
            .transpose()
    }
}
