/**
 * JupyterLab MIME renderer for lens pack traces (application/vnd.lens.pack+json).
 * Ranked below the HTML renderer's default so it wins over the text/html fallback
 * carried in the same bundle.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE } from './layout';
import { renderError, renderPayload } from './render';

export class PackRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('lens-pack-renderer');
    this._mimeType = options.mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const start = performance.now();
    try {
      renderPayload(this.node, model.data[this._mimeType]);
    } catch (e) {
      renderError(this.node, `unexpected error: ${(e as Error).message}`);
    }
    // How long drawing took (read by the browser test's performance check).
    this.node.dataset.renderMs = (performance.now() - start).toFixed(1);
    return Promise.resolve();
  }

  private _mimeType: string;
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new PackRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'lens-pack:plugin',
  description: 'Draws how lens pack splits and reassembles state under each transform.',
  rendererFactory,
  rank: 40,
  dataType: 'json'
};

export default extension;
