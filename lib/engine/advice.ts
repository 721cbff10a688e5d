/**
 * The article's granularity rule: decide how often to save by how much a redone step costs next to a save.
 */
export function granularityAdvice(redoSaveRatio: number): string {
  return redoSaveRatio >= 10
    ? `one redone step costs ${Math.round(redoSaveRatio)}× one save: save per step (batching would redo up to the batch size on every crash)`
    : `a step costs only ${redoSaveRatio.toFixed(1)}× a save: batching saves every few steps is reasonable here`;
}
