package ducklake.jvm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.apache.parquet.format.ColumnChunk;
import org.apache.parquet.format.ColumnMetaData;
import org.apache.parquet.format.EncryptionAlgorithm;
import org.apache.parquet.format.FileCryptoMetaData;
import org.apache.parquet.format.FileMetaData;
import org.apache.parquet.format.RowGroup;
import org.apache.parquet.format.Util;

/**
 * Parquet files encrypted as DuckDB's ducklake extension writes them (an encrypted lake),
 * turned into plaintext Parquet of the same length that any Parquet reader takes.
 *
 * <p>DuckDB encrypts the footer and every page header and page body as one AES-GCM module
 * each ({@code length | 12-byte nonce | ciphertext | 16-byte tag}) with the file's key and
 * no additional authenticated data, which parquet-mr's own decryption cannot read (it
 * always authenticates an AAD). Each decrypted column chunk is put back at its old start;
 * it is shorter by 32 bytes per module, so it fits, and the plaintext footer goes last.
 * Keeping the length keeps the file status and Spark's splits of the file as they were.
 */
public final class EncryptedParquet {
  private static final byte[] ENCRYPTED_MAGIC = "PARE".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] PLAIN_MAGIC = "PAR1".getBytes(StandardCharsets.US_ASCII);
  private static final int NONCE = 12;
  private static final int TAG = 16;

  private EncryptedParquet() {}

  /** Whether the file's last four bytes say its footer is encrypted. */
  public static boolean isEncrypted(byte[] file) {
    return file.length >= 12 && regionEquals(file, file.length - 4, ENCRYPTED_MAGIC);
  }

  /**
   * The plaintext Parquet file of {@code file}, the same length; {@code name} names the file
   * in errors.
   */
  public static byte[] decrypt(byte[] file, byte[] key, String name) throws IOException {
    if (!isEncrypted(file) || !regionEquals(file, 0, ENCRYPTED_MAGIC)) {
      throw new IOException(name + " is not an encrypted Parquet file (no PARE magic)");
    }
    int n = file.length;
    int footerLength = readInt(file, n - 8);
    int footerStart = n - 8 - footerLength;
    if (footerLength <= 0 || footerStart < 4) {
      throw new IOException(name + ": footer length " + footerLength + " does not fit the file");
    }
    ByteArrayInputStream crypto = new ByteArrayInputStream(file, footerStart, footerLength);
    FileCryptoMetaData cryptoMeta = Util.readFileCryptoMetaData(crypto);
    refuseUnlessDuckDbLayout(cryptoMeta, name);
    int moduleStart = footerStart + footerLength - crypto.available();
    FileMetaData meta =
        Util.readFileMetaData(new ByteArrayInputStream(module(file, moduleStart, key, name)));

    byte[] out = new byte[n];
    System.arraycopy(PLAIN_MAGIC, 0, out, 0, 4);
    long end = 4;
    for (RowGroup group : meta.getRow_groups()) {
      long groupBytes = 0;
      for (ColumnChunk chunk : group.getColumns()) {
        if (chunk.isSetCrypto_metadata() || chunk.isSetEncrypted_column_metadata()) {
          throw new IOException(
              name + ": column keys (per-column encryption) are not written by DuckDB and not"
                  + " read here");
        }
        ColumnMetaData column = chunk.getMeta_data();
        boolean dictionary =
            column.isSetDictionary_page_offset() && column.getDictionary_page_offset() > 0;
        long start =
            dictionary
                ? Math.min(column.getDictionary_page_offset(), column.getData_page_offset())
                : column.getData_page_offset();
        long stop = start + column.getTotal_compressed_size();
        if (start < 4 || stop > footerStart) {
          throw new IOException(name + ": a column chunk lies outside the file's data");
        }
        long read = start;
        long written = start;
        int modules = 0;
        long dataPage = start;
        while (read < stop) {
          int length = readInt(file, (int) read);
          byte[] plain = module(file, (int) read + 4, length, key, name);
          System.arraycopy(plain, 0, out, (int) written, plain.length);
          written += plain.length;
          read += 4L + length;
          modules++;
          if (dictionary && modules == 2) {
            dataPage = written; // a dictionary page is its header and its body
          }
        }
        if (read != stop) {
          throw new IOException(name + ": a column chunk's modules overrun its stored size");
        }
        if (dictionary) {
          column.setDictionary_page_offset(start);
        }
        column.setData_page_offset(dataPage);
        column.setTotal_compressed_size(written - start);
        // indexes and bloom filters would point at encrypted bytes: readers do without them
        column.unsetIndex_page_offset();
        column.unsetBloom_filter_offset();
        column.unsetBloom_filter_length();
        chunk.unsetColumn_index_offset();
        chunk.unsetColumn_index_length();
        chunk.unsetOffset_index_offset();
        chunk.unsetOffset_index_length();
        groupBytes += written - start;
        end = Math.max(end, written);
      }
      group.setTotal_compressed_size(groupBytes);
    }
    meta.unsetEncryption_algorithm();
    meta.unsetFooter_signing_key_metadata();
    ByteArrayOutputStream footer = new ByteArrayOutputStream(footerLength);
    Util.writeFileMetaData(meta, footer);
    byte[] plainFooter = footer.toByteArray();
    int plainStart = n - 8 - plainFooter.length;
    if (plainStart < end) {
      throw new IOException(name + ": the plaintext footer does not fit after the data");
    }
    System.arraycopy(plainFooter, 0, out, plainStart, plainFooter.length);
    writeInt(out, n - 8, plainFooter.length);
    System.arraycopy(PLAIN_MAGIC, 0, out, n - 4, 4);
    return out;
  }

  /** DuckDB writes AES_GCM_V1 with no AAD prefix and no key metadata. */
  private static void refuseUnlessDuckDbLayout(FileCryptoMetaData meta, String name)
      throws IOException {
    EncryptionAlgorithm algorithm = meta.getEncryption_algorithm();
    if (algorithm == null || !algorithm.isSetAES_GCM_V1()) {
      throw new IOException(
          name + ": only AES_GCM_V1 encryption (what DuckDB writes) is read here, not "
              + algorithm);
    }
    if (algorithm.getAES_GCM_V1().isSetAad_prefix()
        || algorithm.getAES_GCM_V1().isSetAad_file_unique()
        || meta.isSetKey_metadata()) {
      throw new IOException(
          name + ": Parquet modular encryption with AADs or key metadata (not DuckDB's"
              + " layout) is not read here");
    }
  }

  private static byte[] module(byte[] file, int at, byte[] key, String name) throws IOException {
    return module(file, at + 4, readInt(file, at), key, name);
  }

  /** One module's plaintext: {@code length} bytes at {@code at} hold nonce, data and tag. */
  private static byte[] module(byte[] file, int at, int length, byte[] key, String name)
      throws IOException {
    if (length < NONCE + TAG || (long) at + length > file.length) {
      throw new IOException(name + ": an encrypted module of " + length + " bytes is malformed");
    }
    try {
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      GCMParameterSpec nonce = new GCMParameterSpec(TAG * 8, file, at, NONCE);
      cipher.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), nonce);
      return cipher.doFinal(file, at + NONCE, length - NONCE);
    } catch (AEADBadTagException e) {
      throw new IOException(
          name + ": AES-GCM authentication failed: the catalog's encryption_key is not this"
              + " file's key, or the file is damaged",
          e);
    } catch (GeneralSecurityException e) {
      throw new IOException(name + ": cannot decrypt (" + e + ")", e);
    }
  }

  private static boolean regionEquals(byte[] file, int at, byte[] magic) {
    for (int i = 0; i < magic.length; i++) {
      if (file[at + i] != magic[i]) {
        return false;
      }
    }
    return true;
  }

  private static int readInt(byte[] file, int at) {
    return (file[at] & 0xff)
        | (file[at + 1] & 0xff) << 8
        | (file[at + 2] & 0xff) << 16
        | (file[at + 3] & 0xff) << 24;
  }

  private static void writeInt(byte[] file, int at, int value) {
    for (int i = 0; i < 4; i++) {
      file[at + i] = (byte) (value >>> (8 * i));
    }
  }
}
