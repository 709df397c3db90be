//! Protocol Buffers written by hand, for the gRPC status details the tests
//! send (`google.rpc.Status` with its `Any` details): the two wire types
//! they need, no schema.

/// Appends `value` as a base-128 varint.
pub fn varint(mut value: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends field `number` holding `bytes` (wire type 2: length-delimited).
pub fn bytes_field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(number << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Appends field `number` holding `value` (wire type 0: varint).
pub fn varint_field(number: u64, value: u64, out: &mut Vec<u8>) {
    varint(number << 3, out);
    varint(value, out);
}

/// A `google.rpc.Status` with `code`, `message` and one detail: an
/// `Any` of `type_url` holding `value`.
pub fn status_with_detail(code: u64, message: &[u8], type_url: &[u8], value: &[u8]) -> Vec<u8> {
    let mut any = Vec::new();
    bytes_field(1, type_url, &mut any);
    bytes_field(2, value, &mut any);
    let mut status = Vec::new();
    varint_field(1, code, &mut status);
    bytes_field(2, message, &mut status);
    bytes_field(3, &any, &mut status);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_are_written_as_the_wire_format_says() {
        let mut out = Vec::new();
        varint(300, &mut out);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        bytes_field(2, b"hi", &mut out);
        assert_eq!(out, [0x12, 2, b'h', b'i']);
        let mut out = Vec::new();
        varint_field(1, 8, &mut out);
        assert_eq!(out, [0x08, 8]);
    }
}
