package ducklake.jvm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.apache.parquet.format.ColumnChunk;
import org.apache.parquet.format.ColumnMetaData;
import org.apache.parquet.format.AesGcmV1;
import org.apache.parquet.format.EncryptionAlgorithm;
import org.apache.parquet.format.FileCryptoMetaData;
import org.apache.parquet.format.FileMetaData;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.PageType;
import org.apache.parquet.format.RowGroup;
import org.apache.parquet.format.Util;

/**
 * Parquet files encrypted as DuckDB's ducklake extension writes them (an encrypted lake),
 * turned into plaintext Parquet of the same length that any Parquet reader takes, and
 * plaintext Parquet turned into that layout (what this adapter writes into such a lake).
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

  private static final SecureRandom NONCES = new SecureRandom();

  private EncryptedParquet() {}

  /**
   * {@code plain} (a Parquet file) in DuckDB's encrypted layout under {@code key}: the
   * same pages, each page header and page body one AES-GCM module with a fresh nonce, the
   * footer's offsets moved to match, then the plaintext crypto metadata (AES_GCM_V1, no
   * AAD, no key metadata), the encrypted footer and {@code PARE}, as DuckDB 1.5 writes.
   */
  public static byte[] encrypt(byte[] plain, byte[] key, String name) throws IOException {
    int n = plain.length;
    if (n < 12 || !regionEquals(plain, 0, PLAIN_MAGIC) || !regionEquals(plain, n - 4, PLAIN_MAGIC)) {
      throw new IOException(name + " is not a plaintext Parquet file (no PAR1 magic)");
    }
    int footerLength = readInt(plain, n - 8);
    int footerStart = n - 8 - footerLength;
    if (footerLength <= 0 || footerStart < 4) {
      throw new IOException(name + ": footer length " + footerLength + " does not fit the file");
    }
    FileMetaData meta =
        Util.readFileMetaData(new ByteArrayInputStream(plain, footerStart, footerLength));
    Cipher cipher = cipher();
    ByteArrayOutputStream out = new ByteArrayOutputStream(n + n / 32 + 256);
    out.write(ENCRYPTED_MAGIC, 0, 4);
    for (RowGroup group : meta.getRow_groups()) {
      long groupStart = out.size();
      for (ColumnChunk chunk : group.getColumns()) {
        sealChunk(plain, footerStart, chunk, out, cipher, key, name);
      }
      group.setFile_offset(groupStart);
      group.setTotal_compressed_size(out.size() - groupStart);
    }
    ByteArrayOutputStream footer = new ByteArrayOutputStream(footerLength);
    Util.writeFileMetaData(meta, footer);
    int cryptoStart = out.size();
    EncryptionAlgorithm algorithm = new EncryptionAlgorithm();
    algorithm.setAES_GCM_V1(new AesGcmV1());
    Util.writeFileCryptoMetaData(new FileCryptoMetaData(algorithm), out);
    byte[] plainFooter = footer.toByteArray();
    writeModule(out, plainFooter, 0, plainFooter.length, cipher, key);
    byte[] length = new byte[4];
    writeInt(length, 0, out.size() - cryptoStart);
    out.write(length, 0, 4);
    out.write(ENCRYPTED_MAGIC, 0, 4);
    return out.toByteArray();
  }

  /** One column chunk's pages as modules appended to {@code out}; its metadata moved. */
  private static void sealChunk(
      byte[] plain,
      int dataEnd,
      ColumnChunk chunk,
      ByteArrayOutputStream out,
      Cipher cipher,
      byte[] key,
      String name)
      throws IOException {
    ColumnMetaData column = chunk.getMeta_data();
    boolean dictionary = hasDictionary(column);
    long start = chunkStart(column, dataEnd, name);
    long stop = start + column.getTotal_compressed_size();
    long sealedStart = out.size();
    long firstDataPage = -1;
    long at = start;
    while (at < stop) {
      ByteArrayInputStream in = new ByteArrayInputStream(plain, (int) at, (int) (stop - at));
      PageHeader header = Util.readPageHeader(in);
      int headerLength = (int) (stop - at) - in.available();
      int bodyLength = header.getCompressed_page_size();
      if (bodyLength < 0 || at + headerLength + bodyLength > stop) {
        throw new IOException(name + ": a page overruns its column chunk");
      }
      if (firstDataPage < 0 && header.getType() != PageType.DICTIONARY_PAGE) {
        firstDataPage = out.size();
      }
      writeModule(out, plain, (int) at, headerLength, cipher, key);
      writeModule(out, plain, (int) at + headerLength, bodyLength, cipher, key);
      at += headerLength + bodyLength;
    }
    if (firstDataPage < 0) {
      throw new IOException(name + ": a column chunk has no data page");
    }
    // page indexes and bloom filters are not written encrypted (DuckDB writes none)
    moveChunk(chunk, dictionary, sealedStart, firstDataPage, out.size() - sealedStart);
    chunk.setFile_offset(0); // as DuckDB writes it
  }

  /** A column chunk's pages now lie at {@code start}, its first data page at {@code
   * dataPage}; page indexes and bloom filters, which would point at the old bytes, go. */
  private static void moveChunk(
      ColumnChunk chunk, boolean dictionary, long start, long dataPage, long bytes) {
    ColumnMetaData column = chunk.getMeta_data();
    if (dictionary) {
      column.setDictionary_page_offset(start);
    }
    column.setData_page_offset(dataPage);
    column.setTotal_compressed_size(bytes);
    column.unsetIndex_page_offset();
    column.unsetBloom_filter_offset();
    if (HAS_BLOOM_FILTER_LENGTH) {
      column.unsetBloom_filter_length();
    }
    chunk.unsetColumn_index_offset();
    chunk.unsetColumn_index_length();
    chunk.unsetOffset_index_offset();
    chunk.unsetOffset_index_length();
  }

  /** Parquet's format classes gained the field in 1.14; Spark 3.5 ships 1.13. */
  private static final boolean HAS_BLOOM_FILTER_LENGTH = hasMethod("unsetBloom_filter_length");

  private static boolean hasMethod(String name) {
    try {
      ColumnMetaData.class.getMethod(name);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  private static boolean hasDictionary(ColumnMetaData column) {
    return column.isSetDictionary_page_offset() && column.getDictionary_page_offset() > 0;
  }

  /** Where a column chunk's first page starts; it must end before {@code dataEnd}. */
  private static long chunkStart(ColumnMetaData column, long dataEnd, String name)
      throws IOException {
    long start =
        hasDictionary(column)
            ? Math.min(column.getDictionary_page_offset(), column.getData_page_offset())
            : column.getData_page_offset();
    if (start < 4 || start + column.getTotal_compressed_size() > dataEnd) {
      throw new IOException(name + ": a column chunk lies outside the file's data");
    }
    return start;
  }

  private static Cipher cipher() throws IOException {
    try {
      return Cipher.getInstance("AES/GCM/NoPadding");
    } catch (GeneralSecurityException e) {
      throw new IOException("AES-GCM is not available in this JVM (" + e + ")", e);
    }
  }

  /** {@code length | nonce | ciphertext and tag} of {@code length} bytes at {@code at}. */
  private static void writeModule(
      ByteArrayOutputStream out, byte[] data, int at, int length, Cipher cipher, byte[] key)
      throws IOException {
    byte[] nonce = new byte[NONCE];
    NONCES.nextBytes(nonce);
    byte[] sealed;
    try {
      cipher.init(
          Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(TAG * 8, nonce));
      sealed = cipher.doFinal(data, at, length);
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot encrypt a Parquet module (" + e + ")", e);
    }
    byte[] size = new byte[4];
    writeInt(size, 0, NONCE + sealed.length);
    out.write(size, 0, 4);
    out.write(nonce, 0, NONCE);
    out.write(sealed, 0, sealed.length);
  }

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
        boolean dictionary = hasDictionary(column);
        long start = chunkStart(column, footerStart, name);
        long stop = start + column.getTotal_compressed_size();
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
        moveChunk(chunk, dictionary, start, dataPage, written - start);
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
