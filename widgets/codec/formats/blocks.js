// Checks shared by the block formats (Python lab.formats._blocks): a row of codes with one scale byte per
// block, and an element index into that row (negative counts from the end, as in Python).
import { checkCodes } from "../arrays.js";
import { describe, labError } from "../errors.js";

export function checkBlocks(codes, scaleBytes, groupSize, format, scaleName) {
  const elementCodes = checkCodes(codes, 16, "E2M1 code");
  const bytes = checkCodes(scaleBytes, 256, scaleName);
  if (elementCodes.length === 0 || elementCodes.length % groupSize || bytes.length !== elementCodes.length / groupSize) {
    throw labError(
      "ShapeError",
      `${format} needs ${groupSize}k codes and one scale byte per ${groupSize} codes, ` +
        `got ${elementCodes.length} codes and ${bytes.length} scale bytes`,
    );
  }
  return { elementCodes, bytes };
}

export function checkIndex(index, length) {
  if (typeof index !== "number" || !Number.isInteger(index) || index < -length || index >= length) {
    throw labError("ShapeError", `element index ${describe(index)} is outside a row of ${length} weights`);
  }
  return index < 0 ? index + length : index;
}
