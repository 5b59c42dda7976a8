package io.tierkeeper.compat;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Deterministic payloads. Entry e of a ledger written with seed s is
 * {@code size(e)} bytes of a SplitMix64 stream: state = mix(s + GAMMA*(e+1)),
 * then per 8-byte word state += GAMMA, word = mix(state), stored
 * little-endian; the last word is truncated. Go can regenerate it (see
 * docs/compat.md).
 */
final class Payloads {
    static final long GAMMA = 0x9E3779B97F4A7C15L;
    /** Entry sizes cycle through this table (entry e has SIZES[e % SIZES.length] bytes). */
    static final int[] SIZES = {0, 1, 13, 100, 1024, 4095, 65536, 1 << 20, 257, 31, 8191, 300000};

    private Payloads() {}

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static int size(long entryId) {
        return SIZES[(int) (entryId % SIZES.length)];
    }

    static byte[] payload(long seed, long entryId, int size) {
        byte[] b = new byte[size];
        long state = mix(seed + GAMMA * (entryId + 1));
        for (int i = 0; i < size; i += 8) {
            state += GAMMA;
            long w = mix(state);
            for (int j = 0; j < 8 && i + j < size; j++) {
                b[i + j] = (byte) (w >>> (8 * j));
            }
        }
        return b;
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static String sha256Hex(byte[] b) {
        return HexFormat.of().formatHex(sha256().digest(b));
    }
}
