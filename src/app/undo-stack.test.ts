import { describe, expect, it } from 'vitest';
import { UndoStack } from './undo-stack.js';

describe('UndoStack', () => {
  it('undoes the steps that succeeded, last first, each once', async () => {
    const undone: string[] = [];
    const undo = new UndoStack();
    await undo.step(
      'a',
      () => 'A',
      (v) => undone.push(v),
    );
    await undo.step(
      'b',
      async () => 'B',
      (v) => undone.push(v),
    );
    await expect(
      undo.step(
        'c',
        () => Promise.reject(new Error('c failed')),
        () => undone.push('C'),
      ),
    ).rejects.toThrow('c failed');
    expect(undo.pending()).toEqual(['b', 'a']);
    await undo.unwind();
    await undo.unwind();
    expect(undone).toEqual(['B', 'A']);
    expect(undo.pending()).toEqual([]);
  });

  it('an undo that fails does not stop the ones below it', async () => {
    const undone: string[] = [];
    const undo = new UndoStack();
    undo.push('first', () => undone.push('first'));
    undo.push('broken', () => Promise.reject(new Error('close failed')));
    undo.push('last', () => undone.push('last'));
    await undo.unwind();
    expect(undone).toEqual(['last', 'first']);
  });

  it('a step handed over is not undone by the stack (its new owner does it)', async () => {
    const undone: string[] = [];
    const undo = new UndoStack();
    undo.push('store', () => undone.push('store'));
    undo.push('state dir', () => undone.push('state dir'));
    undo.handOver('store');
    await undo.unwind();
    expect(undone).toEqual(['state dir']);
  });
});
