package ducklake.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;

/**
 * The deleted positions of one data file as a bitset (bit p of word p / 64 set when row p is
 * deleted), decoded from the bytes of its delete file: a positional-delete Parquet file (the
 * {@code pos} column, and for partial delete files the snapshot that deleted each row) or a
 * deletion vector ({@code puffin}: a bare {@code deletion-vector-v1} blob as DuckDB 1.5 writes
 * it, or a Puffin container of cumulative blobs tagged with their DuckLake snapshot).
 *
 * <p>Only deletes of snapshots up to the one read count. Whatever does not decode is an error
 * naming the file: no row is kept or dropped on a guess.
 */
final class DeletedPositions {
  static final int POS_FIELD_ID = 2147483645;
  static final int SNAPSHOT_FIELD_ID = 2147483539;
  private static final int VECTOR_MAGIC = 0xD1D33964;
  private static final byte[] PUFFIN_MAGIC = "PFA1".getBytes(StandardCharsets.US_ASCII);
  private static final int NO_RUNS = 12346;
  private static final int WITH_RUNS = 12347;

  private long[] bits = new long[0];

  private DeletedPositions() {}

  static long[] ofParquet(byte[] file, long begin, long snapshot, String name) throws IOException {
    DeletedPositions out = new DeletedPositions();
    try (ParquetFileReader reader =
        ParquetFileReader.open(new BytesFile(file), ParquetReadOptions.builder().build())) {
      MessageType schema = reader.getFooter().getFileMetaData().getSchema();
      String createdBy = reader.getFooter().getFileMetaData().getCreatedBy();
      ColumnDescriptor pos = column(schema, POS_FIELD_ID, "pos");
      if (pos == null) {
        throw new IOException("delete file " + name + " has no pos column");
      }
      ColumnDescriptor snap = column(schema, SNAPSHOT_FIELD_ID, null);
      PageReadStore group;
      while ((group = reader.readNextRowGroup()) != null) {
        ColumnReadStoreImpl store =
            new ColumnReadStoreImpl(
                group, new GroupRecordConverter(schema).getRootConverter(), schema, createdBy);
        ColumnReader positions = store.getColumnReader(pos);
        ColumnReader snapshots = snap == null ? null : store.getColumnReader(snap);
        for (long i = group.getRowCount(); i > 0; i--) {
          long deletedBy = begin;
          if (snapshots != null) {
            if (snapshots.getCurrentDefinitionLevel() == snap.getMaxDefinitionLevel()) {
              deletedBy = snapshots.getLong();
            }
            snapshots.consume();
          }
          // every value is read before consume(): skipping an unread dictionary-encoded
          // value leaves Parquet's reader a value behind
          if (positions.getCurrentDefinitionLevel() == pos.getMaxDefinitionLevel()) {
            long position = positions.getLong();
            if (deletedBy <= snapshot) {
              out.add(position);
            }
          }
          positions.consume();
        }
      }
    }
    return out.bits;
  }

  static long[] ofVector(byte[] file, long begin, long snapshot, String name) throws IOException {
    DeletedPositions out = new DeletedPositions();
    if (file.length >= 8 && ByteBuffer.wrap(file, 4, 4).getInt() == VECTOR_MAGIC) {
      if (begin <= snapshot) {
        out.addBlob(file, 0, file.length, name);
      }
      return out.bits;
    }
    int n = file.length;
    if (n < 12 || !region(file, 0, PUFFIN_MAGIC) || !region(file, n - 4, PUFFIN_MAGIC)) {
      throw corrupt(name, "neither a deletion-vector-v1 blob nor a Puffin file");
    }
    int payload = ByteBuffer.wrap(file, n - 12, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    int start = n - 12 - payload;
    if (payload < 0 || start < 8 || !region(file, start - 4, PUFFIN_MAGIC)) {
      throw corrupt(name, "Puffin footer magic not found");
    }
    JsonNode footer = new ObjectMapper().readTree(new String(file, start, payload, StandardCharsets.UTF_8));
    for (JsonNode blob : footer.path("blobs")) {
      if (!"deletion-vector-v1".equals(blob.path("type").asText())) {
        throw corrupt(name, "Puffin blob type " + blob.path("type"));
      }
      long offset = blob.path("offset").asLong(-1);
      long length = blob.path("length").asLong(-1);
      if (offset < 0 || length < 0 || offset + length > start - 4) {
        throw corrupt(name, "a Puffin blob reaches outside the file's blobs");
      }
      JsonNode tag = blob.path("properties").path("ducklake-snapshot-id");
      long writtenBy = tag.isMissingNode() || tag.isNull() ? begin : Long.parseLong(tag.asText());
      if (writtenBy <= snapshot) { // cumulative: a later blob holds an earlier one's rows
        out.addBlob(file, (int) offset, (int) length, name);
      }
    }
    return out.bits;
  }

  private void add(long position) {
    if (position < 0) {
      return;
    }
    int word = (int) (position >>> 6);
    if (word >= bits.length) {
      long[] grown = new long[Math.max(word + 1, bits.length * 2)];
      System.arraycopy(bits, 0, grown, 0, bits.length);
      bits = grown;
    }
    bits[word] |= 1L << position;
  }

  /** One deletion-vector-v1 blob: length, magic, 64-bit Roaring bitmap, CRC-32. */
  private void addBlob(byte[] file, int at, int size, String name) throws IOException {
    if (size < 20) {
      throw corrupt(name, size + " bytes is too short for a deletion vector");
    }
    ByteBuffer big = ByteBuffer.wrap(file, at, size);
    int length = big.getInt(at);
    if (length + 8 != size || big.getInt(at + 4) != VECTOR_MAGIC) {
      throw corrupt(name, "bad length prefix or magic");
    }
    CRC32 crc = new CRC32();
    crc.update(file, at + 4, length);
    if ((int) crc.getValue() != big.getInt(at + 4 + length)) {
      throw corrupt(name, "CRC mismatch");
    }
    ByteBuffer in = ByteBuffer.wrap(file, at + 8, length - 4).slice().order(ByteOrder.LITTLE_ENDIAN);
    try {
      long bitmaps = in.getLong();
      for (long b = 0; b < bitmaps; b++) {
        long key = Integer.toUnsignedLong(in.getInt());
        if (key >= 1L << 31) {
          throw corrupt(name, "negative bitmap key");
        }
        addRoaring32(in, key << 32, name);
      }
    } catch (java.nio.BufferUnderflowException | IndexOutOfBoundsException e) {
      throw corrupt(name, "truncated bitmap");
    }
    if (in.hasRemaining()) {
      throw corrupt(name, in.remaining() + " bytes after the last bitmap");
    }
  }

  /** One portable 32-bit Roaring bitmap; every value is added to {@code high}. */
  private void addRoaring32(ByteBuffer in, long high, String name) throws IOException {
    int cookie = in.getInt();
    int n;
    byte[] runFlags = null;
    boolean offsets;
    if (cookie == NO_RUNS) {
      n = in.getInt();
      offsets = true;
    } else if ((cookie & 0xFFFF) == WITH_RUNS) {
      n = (cookie >>> 16) + 1;
      runFlags = new byte[(n + 7) / 8];
      in.get(runFlags);
      offsets = n >= 4;
    } else {
      throw corrupt(name, "unknown Roaring cookie " + Integer.toHexString(cookie));
    }
    int[] keys = new int[n];
    int[] cardinalities = new int[n];
    for (int i = 0; i < n; i++) {
      keys[i] = Short.toUnsignedInt(in.getShort());
      cardinalities[i] = Short.toUnsignedInt(in.getShort()) + 1;
      if (i > 0 && keys[i] <= keys[i - 1]) {
        throw corrupt(name, "container keys are not ascending");
      }
    }
    if (offsets) {
      in.position(in.position() + 4 * n);
    }
    for (int i = 0; i < n; i++) {
      long base = high | ((long) keys[i] << 16);
      int count = 0;
      if (runFlags != null && (runFlags[i / 8] >> (i % 8) & 1) == 1) {
        int runs = Short.toUnsignedInt(in.getShort());
        for (int r = 0; r < runs; r++) {
          int start = Short.toUnsignedInt(in.getShort());
          int length = Short.toUnsignedInt(in.getShort()) + 1;
          if (start + length > 1 << 16) {
            throw corrupt(name, "a run reaches past its container");
          }
          for (int v = start; v < start + length; v++) {
            add(base | v);
          }
          count += length;
        }
      } else if (cardinalities[i] <= 4096) {
        for (int v = 0; v < cardinalities[i]; v++) {
          add(base | Short.toUnsignedInt(in.getShort()));
        }
        count = cardinalities[i];
      } else {
        for (int w = 0; w < 1024; w++) {
          long word = in.getLong();
          count += Long.bitCount(word);
          while (word != 0) {
            add(base | (w << 6) | Long.numberOfTrailingZeros(word));
            word &= word - 1;
          }
        }
      }
      if (count != cardinalities[i]) {
        throw corrupt(name, "container " + i + " holds " + count + " values, not " + cardinalities[i]);
      }
    }
  }

  private static ColumnDescriptor column(MessageType schema, int fieldId, String fallback) {
    for (Type field : schema.getFields()) {
      boolean byId = field.getId() != null && field.getId().intValue() == fieldId;
      if (byId || (field.getId() == null && field.getName().equals(fallback))) {
        return schema.getColumnDescription(new String[] {field.getName()});
      }
    }
    return null;
  }

  private static boolean region(byte[] file, int at, byte[] magic) {
    for (int i = 0; i < magic.length; i++) {
      if (file[at + i] != magic[i]) {
        return false;
      }
    }
    return true;
  }

  private static IOException corrupt(String name, String why) {
    return new IOException(
        "deletion vector " + name + " is corrupt (" + why + "); its deletes cannot be applied");
  }

  /** A Parquet file held in memory. */
  private static final class BytesFile implements InputFile {
    private final byte[] data;

    BytesFile(byte[] data) {
      this.data = data;
    }

    @Override
    public long getLength() {
      return data.length;
    }

    @Override
    public SeekableInputStream newStream() {
      Cursor cursor = new Cursor(data);
      return new DelegatingSeekableInputStream(cursor) {
        @Override
        public long getPos() {
          return cursor.at;
        }

        @Override
        public void seek(long position) {
          cursor.at = (int) position;
        }
      };
    }
  }

  private static final class Cursor extends InputStream {
    private final byte[] data;
    int at;

    Cursor(byte[] data) {
      this.data = data;
    }

    @Override
    public int read() {
      return at < data.length ? data[at++] & 0xFF : -1;
    }

    @Override
    public int read(byte[] into, int offset, int length) {
      if (at >= data.length) {
        return length == 0 ? 0 : -1;
      }
      int n = Math.min(length, data.length - at);
      System.arraycopy(data, at, into, offset, n);
      at += n;
      return n;
    }
  }
}
