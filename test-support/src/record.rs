//! Saved records (`ritmo_core::persist`) as the persist module's docs describe them, so that a
//! test can change a record and seal it again.

/// CRC-32 (IEEE 802.3, reflected, polynomial `0xEDB88320`) of `bytes`: the checksum the docs
/// name, written from the standard, not from ritmo-core.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Writes the checksum of everything before a record's last 4 bytes into them.
pub fn seal(record: &mut [u8]) {
    let end = record.len() - 4;
    let crc = crc32(&record[..end]);
    record[end..].copy_from_slice(&crc.to_le_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn crc32_of_the_standard_check_string() {
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
