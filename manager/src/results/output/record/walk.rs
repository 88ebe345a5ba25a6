//! The walk of a record: its own `Serialize` driving a [`Sink`], field by
//! field (a serde `Serializer` that takes a struct of numbers, booleans,
//! text, unit variants, options and lists, and nothing else).

use serde::ser::{self, Serialize};

use super::{SchemaError, Sink};
/// Where a field's walk is: emits the fields in `range` only.
pub(super) struct Fields<'s, S> {
    pub(super) sink: &'s mut S,
    pub(super) k: usize,
    pub(super) range: std::ops::Range<usize>,
}

fn unsupported<T>(what: &str) -> Result<T, SchemaError> {
    Err(SchemaError(format!(
        "a record file cannot hold {what} (supported: numbers, booleans, text, \
         unit variants, options and lists of those)"
    )))
}

impl<S: Sink> ser::SerializeStruct for Fields<'_, S> {
    type Ok = ();
    type Error = SchemaError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SchemaError> {
        let k = self.k;
        self.k += 1;
        if self.range.contains(&k) {
            self.sink.field(k, key);
            value.serialize(Value(&mut *self.sink))?;
        }
        Ok(())
    }

    fn skip_field(&mut self, _key: &'static str) -> Result<(), SchemaError> {
        // A skipped field keeps its position: the layout is the type's.
        self.k += 1;
        Ok(())
    }

    fn end(self) -> Result<(), SchemaError> {
        Ok(())
    }
}

/// Serializes a record: a struct with named fields, nothing else.
macro_rules! only_struct {
    ($($m:ident($($t:ty),*)),* $(,)?) => {
        $(fn $m(self, $(_: $t),*) -> Result<(), SchemaError> {
            unsupported("a record that is not a struct")
        })*
    };
}

impl<'s, S: Sink> ser::Serializer for Fields<'s, S> {
    type Ok = ();
    type Error = SchemaError;
    type SerializeSeq = ser::Impossible<(), SchemaError>;
    type SerializeTuple = ser::Impossible<(), SchemaError>;
    type SerializeTupleStruct = ser::Impossible<(), SchemaError>;
    type SerializeTupleVariant = ser::Impossible<(), SchemaError>;
    type SerializeMap = ser::Impossible<(), SchemaError>;
    type SerializeStruct = Self;
    type SerializeStructVariant = ser::Impossible<(), SchemaError>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, SchemaError> {
        Ok(self)
    }

    only_struct!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, SchemaError> {
        unsupported("a record that is not a struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, SchemaError> {
        unsupported("a record that is not a struct")
    }
}

/// One field's value into the sink.
struct Value<'s, S>(&'s mut S);

/// The elements of a list field.
struct Items<'s, S> {
    sink: &'s mut S,
    i: usize,
}

impl<S: Sink> ser::SerializeSeq for Items<'_, S> {
    type Ok = ();
    type Error = SchemaError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SchemaError> {
        self.sink.seq_item(self.i);
        self.i += 1;
        value.serialize(Value(&mut *self.sink))
    }

    fn end(self) -> Result<(), SchemaError> {
        self.sink.seq_end();
        Ok(())
    }
}

impl<'s, S: Sink> ser::Serializer for Value<'s, S> {
    type Ok = ();
    type Error = SchemaError;
    type SerializeSeq = Items<'s, S>;
    type SerializeTuple = ser::Impossible<(), SchemaError>;
    type SerializeTupleStruct = ser::Impossible<(), SchemaError>;
    type SerializeTupleVariant = ser::Impossible<(), SchemaError>;
    type SerializeMap = ser::Impossible<(), SchemaError>;
    type SerializeStruct = ser::Impossible<(), SchemaError>;
    type SerializeStructVariant = ser::Impossible<(), SchemaError>;

    fn serialize_bool(self, v: bool) -> Result<(), SchemaError> {
        self.0.flag(v);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), SchemaError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), SchemaError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), SchemaError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), SchemaError> {
        self.0.signed(v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), SchemaError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), SchemaError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), SchemaError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), SchemaError> {
        self.0.int(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), SchemaError> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), SchemaError> {
        self.0.real(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), SchemaError> {
        self.0.text(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), SchemaError> {
        self.0.text(v);
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), SchemaError> {
        unsupported("bytes")
    }
    fn serialize_none(self) -> Result<(), SchemaError> {
        self.0.null();
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), SchemaError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), SchemaError> {
        self.0.null();
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), SchemaError> {
        self.0.null();
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), SchemaError> {
        self.0.name(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), SchemaError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), SchemaError> {
        unsupported("a variant with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Items<'s, S>, SchemaError> {
        self.0.seq_start();
        Ok(Items { sink: self.0, i: 0 })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, SchemaError> {
        unsupported("a tuple")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, SchemaError> {
        unsupported("a tuple")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, SchemaError> {
        unsupported("a variant with data")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, SchemaError> {
        unsupported("a map")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, SchemaError> {
        unsupported("a nested struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, SchemaError> {
        unsupported("a variant with data")
    }
}
