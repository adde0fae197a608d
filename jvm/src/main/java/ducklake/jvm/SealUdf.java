package ducklake.jvm;

import java.util.Base64;
import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ducklake_seal(plaintext parquet, base64 key)}: the file encrypted as DuckDB
 * encrypts the files of an encrypted lake (see {@link EncryptedParquet#encrypt}).
 *
 * <p>Python tasks write a file into memory and hand its bytes on in a row; this UDF runs
 * in the same task's JVM, so plaintext never reaches a disk and executors need nothing
 * but the adapter's jar.
 */
public final class SealUdf implements UDF2<byte[], String, byte[]> {
  private static final long serialVersionUID = 1L;

  @Override
  public byte[] call(byte[] plain, String key) throws Exception {
    if (plain == null) {
      return null;
    }
    return EncryptedParquet.encrypt(plain, Base64.getDecoder().decode(key), "a file being written");
  }
}
