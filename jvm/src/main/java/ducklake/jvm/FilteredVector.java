package ducklake.jvm;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rows {@code keep[0..rows)} of another vector, renumbered from 0: a batch without its
 * deleted rows, with no value copied. Nested values (structs) filter their children alike;
 * arrays and maps are read whole from the kept row of the vector beneath.
 */
final class FilteredVector extends ColumnVector {
  private final ColumnVector in;
  private final int[] keep;
  private final int rows;
  private FilteredVector[] children;

  FilteredVector(ColumnVector in, int[] keep, int rows) {
    super(in.dataType());
    this.in = in;
    this.keep = keep;
    this.rows = rows;
  }

  @Override
  public void close() {} // the reader beneath owns and reuses the vector

  @Override
  public boolean hasNull() {
    return in.hasNull();
  }

  @Override
  public int numNulls() {
    if (!in.hasNull()) {
      return 0;
    }
    int nulls = 0;
    for (int i = 0; i < rows; i++) {
      if (in.isNullAt(keep[i])) {
        nulls++;
      }
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return in.isNullAt(keep[rowId]);
  }

  @Override
  public boolean getBoolean(int rowId) {
    return in.getBoolean(keep[rowId]);
  }

  @Override
  public byte getByte(int rowId) {
    return in.getByte(keep[rowId]);
  }

  @Override
  public short getShort(int rowId) {
    return in.getShort(keep[rowId]);
  }

  @Override
  public int getInt(int rowId) {
    return in.getInt(keep[rowId]);
  }

  @Override
  public long getLong(int rowId) {
    return in.getLong(keep[rowId]);
  }

  @Override
  public float getFloat(int rowId) {
    return in.getFloat(keep[rowId]);
  }

  @Override
  public double getDouble(int rowId) {
    return in.getDouble(keep[rowId]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return in.getArray(keep[rowId]);
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    return in.getMap(keep[ordinal]);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return in.getDecimal(keep[rowId], precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return in.getUTF8String(keep[rowId]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    return in.getBinary(keep[rowId]);
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    if (children == null) {
      children = new FilteredVector[ordinal + 1];
    } else if (children.length <= ordinal) {
      children = java.util.Arrays.copyOf(children, ordinal + 1);
    }
    if (children[ordinal] == null) {
      children[ordinal] = new FilteredVector(in.getChild(ordinal), keep, rows);
    }
    return children[ordinal];
  }
}
