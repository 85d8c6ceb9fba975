// Acknowledgements of cdk-nag findings on resources CDK itself adds (custom-resource handlers), each with its
// reason. Findings on our own constructs are acknowledged next to the construct that causes them.
import { type Stack, Validations } from 'aws-cdk-lib';

const LAMBDA_BASIC_EXECUTION =
  'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]';

export function acknowledgeFrameworkResources(stack: Stack): void {
  for (const child of stack.node.children) {
    // CDK's singleton that applies S3 notifications to an imported bucket (inline code; not configurable).
    if (child.node.id.startsWith('BucketNotificationsHandler'))
      Validations.of(child).acknowledge({
        id: LAMBDA_BASIC_EXECUTION,
        reason:
          "CDK's S3-notification custom resource; it runs once per deploy and writes only its own logs.",
      });
  }
}
