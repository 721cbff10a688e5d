/** GET /api/v1/workflows/{name}/usage's path parameter: the workflow name rule lib/control applies. */
export { workflowRef as workflowParam } from '../control/fields';
